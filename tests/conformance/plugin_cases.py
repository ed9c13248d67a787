"""AWS's `plugin` conformance suite (../shared/conformance-plugin/plugin), kept apart from the core suites
that runner.discover_cases reads: its cases with their handlers in tests/conformance/handlers/plugin, for
the local run (test_plugin_suite.py), the deployed run (test_plugin_suite_deployed.py) and the deployed
package (tests/deploy/conftest.py writes these handlers into it)."""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from runner import OWN_HANDLERS_DIR, REPO_ROOT, Case, _case_sort_key

# ../shared/conformance-plugin beside the repository; STEPWELL_SHARED_PLUGIN_DIR points elsewhere.
PLUGIN_DIR = Path(
    os.environ.get("STEPWELL_SHARED_PLUGIN_DIR") or (REPO_ROOT / ".." / "shared" / "conformance-plugin")
).resolve()
SUITE = "plugin"


def plugin_cases() -> list[Case]:
    """The suite's cases, each with its handler in tests/conformance/handlers/plugin (none when absent)."""
    suite_dir = PLUGIN_DIR / SUITE
    if not suite_dir.is_dir():
        return []
    return [
        Case(
            suite=SUITE,
            case_id=path.stem,
            yaml_path=path,
            handler_path=OWN_HANDLERS_DIR / SUITE / f"{path.stem}.py",
            data=yaml.safe_load(path.read_text()),
        )
        for path in sorted(suite_dir.glob("*.yaml"), key=_case_sort_key)
    ]
