"""Suite-wide rules. Stepwell's fixtures come from the installed plugin (stepwell.testing.pytest_plugin).

- Tests that use a deployed backend get the ``deployed`` marker, so ``-m "not deployed"`` is the fast path.
- ``localstack``-marked tests run only on the LocalStack backend, ``moto``-marked ones only on moto:
  deselected for other backends.
- In CI (``CI=true``) a skipped test fails: a suite skipped because a tool or backend is missing must
  not pass silently.
- With pytest-xdist (``make test`` runs ``-n auto --dist loadgroup``) every test carries an
  ``xdist_group``: the deployed tests of one backend share one apply (a session fixture), so they stay
  in one worker; every other test stays with its module's (module fixtures are set up once).
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _backend_param(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    value = callspec.params.get("stepwell_backend")
    return str(value) if value is not None else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "moto: runs only on the moto backend (the harness's own runtime)")
    # pytest-xdist registers it when loaded; declared here too for a run without it (-p no:xdist).
    config.addinivalue_line("markers", "xdist_group(name): tests that run in one pytest-xdist worker")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    selected: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        fixture_names = getattr(item, "fixturenames", ())
        if "stepwell_backend" in fixture_names:
            item.add_marker(pytest.mark.deployed)
        backend = _backend_param(item)
        group = f"deployed-{backend}" if backend is not None else item.nodeid.partition("::")[0]
        item.add_marker(pytest.mark.xdist_group(name=group))
        only_localstack = item.get_closest_marker("localstack") and backend not in (None, "localstack")
        only_moto = item.get_closest_marker("moto") and backend not in (None, "moto")
        if only_localstack or only_moto:
            deselected.append(item)
        else:
            selected.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, object, object]:
    report = yield
    if (
        _in_ci()
        and isinstance(report, pytest.TestReport)
        and report.skipped
        and not hasattr(report, "wasxfail")
    ):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every suite must run: {reason}"
    return report
