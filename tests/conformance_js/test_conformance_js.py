"""The conformance cases with JavaScript handlers (@aws/durable-execution-sdk-js, unmodified) run as
remote durable functions on the local backend (issue 41): each case's twin, handlers/<suite>/<id>.mjs, runs
in a warm `node` worker of the local Lambda runtime and checkpoints through the API, judged by the same
runner and rules as the Python handlers (tests/remote/remote_backend.py, Language.JAVASCRIPT). README.md
lists the cases without a twin and the known differences (known_differences.py: each such case must fail
exactly where its differences say).

Without node or the npm install (make node) the cases skip, except with CI=true, where they fail.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conformance_js.known_differences import KNOWN_DIFFERENCES, location
from tests.remote.node_functions import node_missing_reason
from tests.remote.remote_backend import (
    Case,
    Language,
    discover_cases,
    js_handler_path,
    run_as_remote_function,
)

README = Path(__file__).with_name("README.md")
CASES = discover_cases()
MAPPED = [case for case in CASES if js_handler_path(case).is_file()]
UNMAPPED = [case for case in CASES if not js_handler_path(case).is_file()]
MISSING = node_missing_reason(shutil.which("node"))
IN_CI = os.environ.get("CI", "").lower() == "true"


def _skip_without_node() -> None:
    if MISSING is not None:
        assert not IN_CI, f"CI=true but JavaScript functions cannot run: {MISSING}"
        pytest.skip(MISSING)


@pytest.mark.parametrize(
    "case", [pytest.param(case, id=case.test_id) for case in MAPPED if case.test_id not in KNOWN_DIFFERENCES]
)
def test_a_case_passes_with_its_javascript_handler_as_a_remote_function(case: Case) -> None:
    _skip_without_node()
    result, report = run_as_remote_function(case, Language.JAVASCRIPT)
    assert result.passed, report


@pytest.mark.parametrize(
    "case", [pytest.param(case, id=case.test_id) for case in MAPPED if case.test_id in KNOWN_DIFFERENCES]
)
def test_a_case_pinned_to_the_python_sdk_fails_only_where_its_known_differences_say(case: Case) -> None:
    _skip_without_node()
    difference = KNOWN_DIFFERENCES[case.test_id]
    result, report = run_as_remote_function(case, Language.JAVASCRIPT)
    assert not result.passed, f"{case.test_id} (javascript) passes now: remove it from known_differences.py"
    found = {location(error) for error in result.errors}
    assert found == difference.locations, (
        f"{case.test_id} (javascript) fails elsewhere than its known differences "
        f"({'; '.join(difference.reasons)}): unexpected {sorted(found - difference.locations)}, "
        f"no longer failing {sorted(difference.locations - found)}\n{report}"
    )


def test_the_readme_lists_every_case_without_a_javascript_handler_and_every_known_difference() -> None:
    text = README.read_text()
    listed = set(re.findall(r"`([a-z_]+/[a-z0-9-]+)`", text))
    missing = sorted(case.test_id for case in UNMAPPED if case.test_id not in listed)
    assert not missing, f"{README} does not list these cases that have no JavaScript handler: {missing}"
    undocumented = sorted(case_id for case_id in KNOWN_DIFFERENCES if case_id not in listed)
    assert not undocumented, f"{README} does not name these known differences: {undocumented}"
    unknown = sorted(set(KNOWN_DIFFERENCES) - {case.test_id for case in MAPPED})
    assert not unknown, f"known_differences.py names cases that have no JavaScript handler: {unknown}"
