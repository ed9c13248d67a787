"""Every conformance case on a backend (see README.md for the contract).

STEPWELL_CONFORMANCE_BACKEND picks the backend: "local" (default: the in-process engine on a virtual
clock) or "module:Class" naming any class with the ConformanceBackend methods, e.g.
"local_api_backend:LocalApiBackend" (the same engine, driven through AWS's durable execution API). A
backend's `close()`, when it has one, is called after its case.
"""

from __future__ import annotations

import importlib
import os

import pytest
from local_backend import LocalBackend
from runner import SHARED_CONFORMANCE_DIR, Case, ConformanceBackend, run_case

BACKEND_ENV = "STEPWELL_CONFORMANCE_BACKEND"


def make_backend() -> ConformanceBackend:
    choice = os.environ.get(BACKEND_ENV, "local").strip() or "local"
    if choice == "local":
        return LocalBackend()
    module_name, sep, class_name = choice.partition(":")
    if not sep or not module_name or not class_name:
        raise ValueError(f"{BACKEND_ENV}={choice!r}: expected 'local' or 'module:Class'")
    backend: ConformanceBackend = getattr(importlib.import_module(module_name), class_name)()
    return backend


def test_case(conformance_case: Case | None) -> None:
    if conformance_case is None:
        assert os.environ.get("CI", "").lower() != "true", (
            f"CI=true but AWS's shared conformance cases were not found: {SHARED_CONFORMANCE_DIR} is absent"
        )
        pytest.skip("AWS's shared conformance cases are absent")
    backend = make_backend()
    try:
        result = run_case(conformance_case, backend)
    finally:
        close = getattr(backend, "close", None)  # a backend with a server (local_api_backend) shuts it
        if callable(close):
            close()
    assert result.passed, "\n".join(
        [*result.errors, "actual history:", *(str(event) for event in result.history)]
    )
