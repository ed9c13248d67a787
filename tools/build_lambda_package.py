#!/usr/bin/env python3
"""Build the Stepwell worker's Lambda zip, byte for byte the same from the same sources.

Standard library only (it runs from Terraform's local-exec on any machine with Python and pip).
The zip holds:
  stepwell/      the engine package (without stepwell/testing, stepwell/console and bytecode)
  <deps>         the pinned requirements, installed for the Lambda's platform and Python version
  workflows/     the user's workflow code (optional)

Determinism: entries sorted by name, fixed timestamps (1980-01-01), fixed modes (0644 files,
0755 executables), fixed compression. Installed dependencies are cached per hash of the
requirements, platform and Python version, so repeated builds need no network.

Options default to STEPWELL_BUILD_* environment variables so Terraform can pass paths without
shell quoting.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

FIXED_DATE_TIME = (1980, 1, 1, 0, 0, 0)
SKIPPED_DIR_NAMES = {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
SKIPPED_SUFFIXES = (".pyc", ".pyo")
# The test harness and the console never ship in the Lambda; modules/engine/package.tf reads the same list.
EXCLUDES_FILE = Path(__file__).resolve().with_name("lambda_package_excludes.json")
ENGINE_EXCLUDED_TOP_LEVEL = frozenset(
    json.loads(EXCLUDES_FILE.read_text(encoding="utf-8"))["engine_excluded_top_level"]
)
DEPS_EXCLUDED_TOP_LEVEL = {"bin"}  # console scripts pip writes for the installing machine
PLATFORMS = ("manylinux2014_aarch64", "manylinux2014_x86_64")


class BuildError(RuntimeError):
    """A build input is missing or wrong."""


def iter_files(root: Path, excluded_top_level: frozenset[str] = frozenset()) -> Iterator[tuple[str, Path]]:
    """Yield (posix path relative to root, file) for every file to package, skipping caches and bytecode."""
    for directory, dir_names, file_names in os.walk(root):
        relative_dir = Path(directory).relative_to(root)
        dir_names[:] = sorted(
            name
            for name in dir_names
            if name not in SKIPPED_DIR_NAMES
            and not (relative_dir == Path(".") and name in excluded_top_level)
        )
        for file_name in sorted(file_names):
            if file_name.endswith(SKIPPED_SUFFIXES):
                continue
            if relative_dir == Path(".") and file_name in excluded_top_level:
                continue
            path = Path(directory) / file_name
            yield (relative_dir / file_name).as_posix(), path


def requirements_key(requirements: Path, platform: str, python_version: str) -> str:
    digest = hashlib.sha256()
    digest.update(requirements.read_bytes())
    digest.update(f"\0{platform}\0{python_version}".encode())
    return digest.hexdigest()[:32]


def has_requirements(requirements: Path) -> bool:
    for line in requirements.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.strip().startswith("#"):
            return True
    return False


def install_dependencies(requirements: Path, platform: str, python_version: str, cache_dir: Path) -> Path:
    """Install the requirements for the Lambda's platform into a cached folder and return it."""
    target = cache_dir / requirements_key(requirements, platform, python_version)
    if (target / ".complete").exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="deps-", dir=cache_dir))
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        # Only the pinned list: boto3/botocore come with the Lambda runtime.
        "--no-deps",
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--platform",
        platform,
        "--python-version",
        python_version,
        "--target",
        str(staging),
        "--requirement",
        str(requirements),
    ]
    try:
        subprocess.run(command, check=True)
    except subprocess.CalledProcessError as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise BuildError(
            f"pip could not install {requirements} for {platform} / Python {python_version}"
        ) from error
    (staging / ".complete").write_text("ok\n", encoding="utf-8")
    if target.exists():
        # A concurrent build finished first; its result is the same.
        shutil.rmtree(staging, ignore_errors=True)
    else:
        staging.rename(target)
    return target


def zip_entries(engine_dir: Path, deps_dir: Path | None, workflows_dir: Path | None) -> dict[str, Path]:
    entries: dict[str, Path] = {}

    def add(name: str, path: Path) -> None:
        if name in entries:
            raise BuildError(f"two files want the same zip entry {name!r}: {entries[name]} and {path}")
        entries[name] = path

    for relative, path in iter_files(engine_dir, ENGINE_EXCLUDED_TOP_LEVEL):
        add(f"stepwell/{relative}", path)
    if deps_dir is not None:
        for relative, path in iter_files(deps_dir, frozenset(DEPS_EXCLUDED_TOP_LEVEL | {".complete"})):
            if relative.startswith("stepwell/"):
                raise BuildError(f"a requirement installs {relative!r}, which would shadow the engine")
            add(relative, path)
    if workflows_dir is not None:
        for relative, path in iter_files(workflows_dir):
            add(f"workflows/{relative}", path)
    return entries


def write_zip(entries: dict[str, Path], output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary_name = tempfile.mkstemp(prefix=".stepwell-", suffix=".zip", dir=output.parent)
    os.close(handle)
    temporary = Path(temporary_name)
    try:
        with zipfile.ZipFile(temporary, "w") as archive:
            for name in sorted(entries):
                path = entries[name]
                info = zipfile.ZipInfo(name, date_time=FIXED_DATE_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.create_system = 3  # Unix, so the mode bits below are honoured
                executable = bool(path.stat().st_mode & stat.S_IXUSR)
                info.external_attr = ((0o100755 if executable else 0o100644) & 0xFFFF) << 16
                archive.writestr(info, path.read_bytes(), compresslevel=9)
        # mkstemp creates 0600; the package is not secret and other tools (and users) read it.
        temporary.chmod(0o644)
        temporary.replace(output)
    finally:
        temporary.unlink(missing_ok=True)


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stepwell" / "lambda-deps"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    env = os.environ
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default=env.get("STEPWELL_BUILD_OUTPUT"), help="zip file to write")
    parser.add_argument(
        "--engine-dir", default=env.get("STEPWELL_BUILD_ENGINE_DIR"), help="the stepwell package directory"
    )
    parser.add_argument(
        "--requirements", default=env.get("STEPWELL_BUILD_REQUIREMENTS"), help="pinned runtime requirements"
    )
    parser.add_argument(
        "--workflows-dir",
        default=env.get("STEPWELL_BUILD_WORKFLOWS_DIR") or None,
        help="user workflow code, packaged under workflows/",
    )
    parser.add_argument(
        "--platform",
        default=env.get("STEPWELL_BUILD_PLATFORM", "manylinux2014_aarch64"),
        choices=PLATFORMS,
        help="pip platform tag of the Lambda architecture",
    )
    parser.add_argument(
        "--python-version",
        default=env.get("STEPWELL_BUILD_PYTHON_VERSION", "3.13"),
        help="Python version of the Lambda runtime, e.g. 3.13",
    )
    parser.add_argument(
        "--cache-dir",
        default=env.get("STEPWELL_BUILD_CACHE_DIR") or str(default_cache_dir()),
        help="where installed dependencies are cached",
    )
    args = parser.parse_args(argv)
    for option in ("output", "engine_dir"):
        if not getattr(args, option):
            parser.error(f"--{option.replace('_', '-')} is required (or STEPWELL_BUILD_{option.upper()})")
    if not args.python_version.replace(".", "").isdigit() or args.python_version.count(".") != 1:
        parser.error(f"--python-version must look like 3.13, got {args.python_version!r}")
    return args


def build(args: argparse.Namespace) -> Path:
    engine_dir = Path(args.engine_dir)
    if not (engine_dir / "__init__.py").is_file():
        raise BuildError(f"engine dir {engine_dir} is not a Python package (no __init__.py)")
    workflows_dir = Path(args.workflows_dir) if args.workflows_dir else None
    if workflows_dir is not None and not workflows_dir.is_dir():
        raise BuildError(f"workflows dir {workflows_dir} does not exist or is not a directory")
    deps_dir = None
    if args.requirements:
        requirements = Path(args.requirements)
        if not requirements.is_file():
            raise BuildError(f"requirements file {requirements} does not exist")
        if has_requirements(requirements):
            deps_dir = install_dependencies(
                requirements, args.platform, args.python_version, Path(args.cache_dir)
            )
    output = Path(args.output)
    write_zip(zip_entries(engine_dir, deps_dir, workflows_dir), output)
    return output


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        output = build(args)
    except BuildError as error:
        print(f"build_lambda_package: {error}", file=sys.stderr)
        return 1
    digest = hashlib.sha256(output.read_bytes()).hexdigest()
    print(f"built {output} ({output.stat().st_size} bytes, sha256 {digest})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
