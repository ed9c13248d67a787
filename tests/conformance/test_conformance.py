"""Every conformance case on the local backend (see README.md for the contract)."""

from __future__ import annotations

import os

import pytest
from local_backend import LocalBackend
from runner import SHARED_CONFORMANCE_DIR, Case, run_case


def test_case(conformance_case: Case | None) -> None:
    if conformance_case is None:
        assert os.environ.get("CI", "").lower() != "true", (
            f"CI=true but no conformance cases were found: {SHARED_CONFORMANCE_DIR} is absent"
        )
        pytest.skip("no conformance cases")
    result = run_case(conformance_case, LocalBackend())
    assert result.passed, "\n".join(
        [*result.errors, "actual history:", *(str(event) for event in result.history)]
    )
