"""The worker's zip carries the engine, never the test harness or the console (developer tools), and the
module hashes the same selection (tests/terraform/package.tftest.hcl checks the Terraform side)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
ENGINE_DIR = REPO / "lambda_src" / "stepwell"


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_lambda_package", REPO / "tools" / "build_lambda_package.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_the_zip_leaves_out_the_harness_and_the_console(tmp_path: Path) -> None:
    builder = _builder()
    assert frozenset({"console", "testing"}) == builder.ENGINE_EXCLUDED_TOP_LEVEL
    entries = builder.zip_entries(ENGINE_DIR, None, None)
    assert "stepwell/core/engine.py" in entries and "stepwell/features/definitions/schema.json" in entries
    assert not [name for name in entries if name.startswith(("stepwell/console/", "stepwell/testing/"))]
    # Everything else of the package is in it.
    on_disk = {
        f"stepwell/{path.relative_to(ENGINE_DIR).as_posix()}"
        for path in ENGINE_DIR.rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and path.suffix != ".pyc"
        and path.relative_to(ENGINE_DIR).parts[0] not in ("console", "testing")
    }
    assert set(entries) == on_disk

    output = tmp_path / "worker.zip"
    builder.write_zip(entries, output)
    import zipfile

    with zipfile.ZipFile(output) as archive:
        names = archive.namelist()
    assert "stepwell/console/app.py" not in names and "stepwell/cli/__init__.py" in names
