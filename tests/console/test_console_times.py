"""Times on the virtual clock: an execution started after the harness's clock skipped three days ahead
starts and ends together on the console's page, as its history says.

Issue 39: on moto, an execution that failed at +0 s showed "Ended" three days after "Started". The handlers
stamp its first run and its end on the virtual clock, but the operator's client stamped its start on the
wall clock: three days earlier, so a one-day execution timeout (counted from the start) had passed at its
first run too. The demo's client (stepwell.testing.demo.operator_client) follows the virtual clock.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from adapters.conftest import aws_credentials, deployment  # noqa: F401 - fixtures used by name
from adapters.deployment import Deployment
from adapters.driver import QueueDriver
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell import clock as engine_clock
from stepwell.client import StepwellClient
from stepwell.console.app import create_app
from stepwell.core.registry import Registry
from stepwell.testing.demo import EngineClock, operator_client
from stepwell.testing.scheduler import VirtualClock
from stepwell.wiring.entry import EntryRuntime

from console.conftest import ACCESS_TOKEN, CSRF, signed_in

WORKFLOW = "orders.quick"
ClientOf = Callable[[dict[str, Any], VirtualClock], StepwellClient]
_SUMMARY_TIME = re.compile(r"<tr><th>(Started|Ended) \(UTC\)</th><td>([^<]*)</td></tr>")


@durable_execution
def quick(event: Any, context: DurableContext) -> Any:
    return context.step(lambda _: "done", name="only")


def _run_after_three_days(stack: Deployment, client_of: ClientOf) -> tuple[dict[str, Any], dict[str, str]]:
    """Skip the handlers' clock three days, start WORKFLOW with the client `client_of(config, clock)`
    gives, run it: its description and the console page's Started and Ended."""
    virtual = VirtualClock()
    registry = Registry()
    registry.register(WORKFLOW, quick, execution_timeout=86400)
    # The deployed worker's clock follows the virtual one (the local runtime's clock offset).
    runtime = EntryRuntime.from_config(
        stack.config, stack.clients, registry=registry, clock=EngineClock(virtual)
    )
    # Only its schedules would use the driver's clock: this run sets none.
    driver = QueueDriver(stack, runtime, engine_clock.VirtualClock())
    client = client_of({**stack.config.to_client_config(), "workflows": [WORKFLOW]}, virtual)
    virtual.advance(timedelta(days=3))
    execution_id = client.start_execution(WORKFLOW, None)
    driver.run_until_quiet(fire_schedules=False)
    app = create_app(client, access_token=ACCESS_TOKEN, csrf_token=CSRF)
    page = signed_in(app).get("/execution", query_string={"id": execution_id}).get_data(as_text=True)
    return client.describe_execution(execution_id), dict(_SUMMARY_TIME.findall(page))


def _seconds_between(shown: dict[str, str]) -> float:
    started, ended = (
        datetime.fromisoformat(shown[key].replace("Z", "+00:00")) for key in ("Started", "Ended")
    )
    return (ended - started).total_seconds()


def test_a_start_after_the_clock_skipped_starts_and_ends_together(deployment: Deployment) -> None:  # noqa: F811
    description, shown = _run_after_three_days(
        deployment, lambda config, virtual: operator_client(config, deployment.clients, virtual)
    )
    assert description["Status"] == "SUCCEEDED", description.get("Error")
    assert 0 <= description["EndTimestamp"] - description["StartTimestamp"] < 60
    assert 0 <= _seconds_between(shown) < 60


def test_a_client_on_the_wall_clock_was_the_cause(deployment: Deployment) -> None:  # noqa: F811
    """The same run with a client on the wall clock: the start three days before the end, and a one-day
    execution timeout passed at the first run."""
    description, shown = _run_after_three_days(
        deployment,
        lambda config, _virtual: StepwellClient.from_client_config(config, deployment.clients),
    )
    assert description["Status"] == "TIMED_OUT"
    assert _seconds_between(shown) > timedelta(days=3).total_seconds() - 60
