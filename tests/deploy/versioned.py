"""Two versions of one workflow module: the deployed stack starts with v1 (tests/deploy/conftest.py
packages it); test_versions_deployed.py deploys v2 over it mid-session."""

from __future__ import annotations

from pathlib import Path

VERSIONED_MODULE = "stepwell_versioned.py"
VERSIONED_SOURCES = {
    code: Path(__file__).resolve().parent / "workflows" / "versions" / f"{code}.py" for code in ("v1", "v2")
}
