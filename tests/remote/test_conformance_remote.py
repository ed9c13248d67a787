"""Every conformance case with its handler run as a remote durable function (tests/remote/remote_backend.py):
the same Python handler file passes the same cases in the worker (tests/conformance) and as its own
function checkpointing through the API (issue 41). The JavaScript twins run the same way in
tests/conformance_js."""

from __future__ import annotations

import pytest

from tests.remote.remote_backend import Case, Language, discover_cases, run_as_remote_function


@pytest.mark.parametrize("case", [pytest.param(case, id=case.test_id) for case in discover_cases()])
def test_a_case_passes_with_its_handler_as_a_remote_function(case: Case) -> None:
    result, report = run_as_remote_function(case, Language.PYTHON)
    assert result.passed, report
