"""Build the function's package, build/orders.zip: src/*.ts compiled by the TypeScript compiler, beside the
npm packages it runs with, zipped byte for byte the same from the same inputs (so Terraform's
source_code_hash changes only when the code or a package does).

    python examples/durable-functions/build.py [--out PATH] [--node-modules DIR]

The packages are tools/node's (`make node`: npm ci of its package-lock.json): the production ones only, as
`npm ci --omit=dev` would install them; the compiler (a dev dependency) is not bundled. In your own repo this
is `npm ci && npx tsc && zip` in CI, or whatever already builds your function.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from stepwell.testing.lambda_runtime.node_packages import PackagesNotInstalled, package_files

EXAMPLE = Path(__file__).resolve().parent
NODE_TOOLS = EXAMPLE.parents[1] / "tools" / "node"
DEFAULT_OUT = EXAMPLE / "build" / "orders.zip"
# Every entry gets this time and these permissions: the zip depends on the files' contents and names only.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
FILE_MODE = 0o644 << 16


def compile_typescript(node_modules: Path, out_dir: Path) -> list[Path]:
    """tsc -p tsconfig.json in a scratch copy of the sources whose node_modules is `node_modules` (the
    compiler resolves the SDK's types there); returns the JavaScript files it wrote to `out_dir`."""
    tsc = node_modules / ".bin" / "tsc"
    if not tsc.exists():
        raise SystemExit(f"no TypeScript compiler at {tsc}: run `make node` (npm ci in tools/node)")
    with tempfile.TemporaryDirectory(prefix="durable-functions-build-") as scratch:
        root = Path(scratch)
        shutil.copytree(EXAMPLE / "src", root / "src")
        shutil.copy2(EXAMPLE / "tsconfig.json", root / "tsconfig.json")
        (root / "node_modules").symlink_to(node_modules, target_is_directory=True)
        compiled = subprocess.run(
            [str(tsc), "-p", str(root / "tsconfig.json"), "--outDir", str(out_dir)],
            capture_output=True,
            text=True,
            check=False,
        )
    if compiled.returncode != 0:
        raise SystemExit(f"tsc failed ({compiled.returncode}):\n{compiled.stdout}{compiled.stderr}")
    return sorted(out_dir.rglob("*.js"))


def _add(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, ZIP_TIME)
    info.external_attr = FILE_MODE
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def build(out: Path = DEFAULT_OUT, node_modules: Path = NODE_TOOLS / "node_modules") -> Path:
    """Write the package to `out` and return it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="durable-functions-js-") as compiled_dir:
        compiled = Path(compiled_dir)
        entries = {
            path.relative_to(compiled).as_posix(): path.read_bytes()
            for path in compile_typescript(node_modules, compiled)
        }
    try:
        entries.update(package_files(node_modules))
    except PackagesNotInstalled as missing:
        raise SystemExit(str(missing)) from None
    partial = out.with_suffix(".zip.partial")
    with zipfile.ZipFile(partial, "w") as archive:
        for name in sorted(entries):
            _add(archive, name, entries[name])
    partial.replace(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"the zip to write (default {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--node-modules", type=Path, default=NODE_TOOLS / "node_modules", help="the installed npm packages"
    )
    arguments = parser.parse_args()
    print(build(arguments.out, arguments.node_modules))


if __name__ == "__main__":
    main()
