"""Every conformance case with its handler run as a remote durable function (tests/remote/remote_backend.py):
the same Python handler file passes the same cases in the worker (tests/conformance) and as its own
function checkpointing through the API (issue 41)."""

from __future__ import annotations

import pytest

from tests.remote.remote_backend import Case, RemoteBackend, discover_cases, run_case


@pytest.mark.parametrize("case", [pytest.param(case, id=case.test_id) for case in discover_cases()])
def test_a_case_passes_with_its_handler_as_a_remote_function(case: Case) -> None:
    backend = RemoteBackend()
    try:
        result = run_case(case, backend)
    finally:
        backend.close()
    assert result.passed, "\n".join(
        [f"{case.test_id} (Python, as a remote function):", *result.errors, "actual history:"]
        + [str(event) for event in result.history]
    )
