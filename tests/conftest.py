"""Suite-wide rules. Stepwell's fixtures come from the installed plugin (stepwell.testing.pytest_plugin).

- Tests that use a deployed backend get the ``deployed`` marker, so ``-m "not deployed"`` is the fast path.
- ``localstack``-marked tests run only on the LocalStack backend, ``moto``-marked ones only on moto:
  deselected for other backends.
- In CI (``CI=true``) a skipped test fails: a suite skipped because a tool or backend is missing must
  not pass silently.
- With pytest-xdist (``make test`` runs one worker more than CPUs) tests are handed to workers in units
  (``_xdist_unit``): the deployed tests of one backend share one apply (a session fixture), so they are
  one unit (an example's deployed tests, which apply the example's own root, are one unit per example);
  every other test goes with its module's (module fixtures are set up once).
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Generator
from pathlib import Path
from typing import Any

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    selected: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        fixture_names = getattr(item, "fixturenames", ())
        if "stepwell_backend" in fixture_names:
            item.add_marker(pytest.mark.deployed)
        backend = _backend_param(item)
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


DEPLOYED_BACKENDS = ("moto", "localstack")


def _xdist_unit(nodeid: str) -> str:
    """The unit a test goes to a pytest-xdist worker with: a deployed backend's tests together (their
    parameter id names the backend: `test_x[moto]`, `test_case[step/1-1-localstack]`), else its module.
    Read from the node id because the controller, which schedules, has no items (and pytest-xdist 3.8's
    xdist_group marks do not reach the node ids of pytest 9.2)."""
    module, _, rest = nodeid.partition("::")
    parameters = rest.rpartition("[")[2].rstrip("]") if rest.endswith("]") else ""
    backend = next((name for name in DEPLOYED_BACKENDS if name in parameters.split("-")), None)
    if backend is None:
        return module
    if not module.startswith("tests/"):
        # An example applies its own root (its conftest overrides deployed_stack): its deployed tests are a
        # unit of their own, which another worker can run beside this suite's shared stack.
        return f"{module.rpartition('/')[0]}-deployed-{backend}"
    return f"deployed-{backend}"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class DeployedTogether(LoadScopeScheduling):
        """pytest-xdist's scope scheduling (units sent whole, the largest first) on `_xdist_unit`."""

        def _split_scope(self, nodeid: str) -> str:
            return _xdist_unit(nodeid)

    return DeployedTogether(config, log)


# The conformance summaries: each case's call report carries its suite (tests/conformance/conftest.py) or,
# on a deployed stack, (backend, suite, seconds for all cases) (tests/deploy/test_conformance_deployed.py).
# They are counted here, where the summary is printed: a pytest-xdist controller loads only this conftest.
CONFORMANCE_SUITE = "stepwell_conformance_suite"
DEPLOYED_CONFORMANCE = "stepwell_deployed_conformance"
_conformance: dict[str, tuple[Counter[str], Counter[str], float | None]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    properties = dict(report.user_properties) if report.when == "call" else {}
    if CONFORMANCE_SUITE in properties:
        backend = os.environ.get("STEPWELL_CONFORMANCE_BACKEND", "local") or "local"
        title, suite, seconds = f"conformance ({backend} backend)", properties[CONFORMANCE_SUITE], None
    elif DEPLOYED_CONFORMANCE in properties:
        backend, suite, seconds = properties[DEPLOYED_CONFORMANCE]
        title = f"conformance (deployed stack on {backend})"
    else:
        return
    passed, total, _ = _conformance.setdefault(title, (Counter(), Counter(), None))
    total[suite] += 1
    passed[suite] += int(report.passed)
    _conformance[title] = (passed, total, None if seconds is None else float(seconds))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _conformance:
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent / "conformance"))
    from runner import SUITES

    for title, (passed, total, seconds) in _conformance.items():
        terminalreporter.section(title)
        for suite in [suite for suite in SUITES if suite in total] + sorted(set(total) - set(SUITES)):
            terminalreporter.write_line(f"{suite:<20} {passed[suite]:>3}/{total[suite]}")
        timing = "" if seconds is None else f"  ({seconds:.0f} s for all cases)"
        terminalreporter.write_line(f"{'total':<20} {sum(passed.values()):>3}/{sum(total.values())}{timing}")
