"""Flow control on the deployed stack, on each backend, with examples/complete's `shipments.book` (at most two
bookings in progress per carrier, at most ten new ones a minute per carrier) and the test workflow
`flow.rated` (two starts a minute per customer).

Concurrency: of five bookings with one carrier two run and three wait, in the order they reached the key;
a booking with another carrier is not held up; each end (a confirmation, a stop) starts the next waiting
one; `stepwell flow` shows the counts. Rate: of five starts for one customer two start at once, two are
delayed by exactly the period and one by twice the period, each recorded as a due wake-up.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from deployed_backend import DeployedTarget
from stepwell.cli import main as cli_main
from stepwell.client import StepwellClient
from stepwell.testing.deployed_fixtures import DeployedStack
from stepwell.testing.scheduler import VirtualClock

pytestmark = pytest.mark.deployed

WAIT_SECONDS = 180.0


def _started(client: StepwellClient, execution_id: str) -> bool:
    return any(
        event["EventType"] == "ExecutionStarted" for event in client.get_execution_history(execution_id)
    )


def _callback_id(client: StepwellClient, execution_id: str) -> str | None:
    for event in client.get_execution_history(execution_id):
        if event["EventType"] == "CallbackStarted":
            return str(event["CallbackStartedDetails"]["CallbackId"])
    return None


def _settle(target: DeployedTarget, done: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        target.process_queue()
        if done():
            return
        assert time.monotonic() < deadline, f"never reached: {what}"
        time.sleep(0.2)


def test_bookings_per_carrier_wait_in_order_for_a_free_slot(
    deployed_stack: DeployedStack,
    deployed_target: DeployedTarget,
    deployed_client: StepwellClient,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
) -> None:
    run = uuid.uuid4().hex[:10]
    carrier, other = f"acme-{run}", f"globex-{run}"
    client = deployed_client
    bookings = [
        client.start_execution("shipments.book", {"carrier": carrier, "parcel": n}, f"book-{run}-{n}")
        for n in range(5)
    ]
    elsewhere = client.start_execution("shipments.book", {"carrier": other, "parcel": 9}, f"other-{run}")

    def running() -> list[str]:
        return [each for each in bookings if _callback_id(client, each) is not None and _is_running(each)]

    def _is_running(execution_id: str) -> bool:
        return client.describe_execution(execution_id)["Status"] == "RUNNING"

    _settle(deployed_target, lambda: len(running()) == 2 and _callback_id(client, elsewhere), "two running")
    first_two = running()
    waiting = [each for each in bookings if each not in first_two]
    assert all(not _started(client, each) for each in waiting), "a waiting booking has started"
    assert all(client.describe_execution(each)["Status"] == "RUNNING" for each in waiting)

    status = client.flow_status("shipments.book", key=carrier)
    assert status["concurrency"]["limit"] == 2
    assert status["concurrency"]["running"] == 2
    assert status["concurrency"]["waiting"] == 3
    assert sorted(status["concurrency"]["holders"]) == sorted(first_two)
    queue = status["concurrency"]["next"]
    assert sorted(queue) == sorted(waiting)
    assert client.flow_status("shipments.book", key=other)["concurrency"]["running"] == 1

    # The CLI shows the same counts (with the backend's endpoint and credentials, as an operator's shell).
    for name, value in deployed_stack.backend.environment().items():
        monkeypatch.setenv(name, value)
    config_file = tmp_path / "stepwell.json"
    config_file.write_text(json.dumps(deployed_stack.client_config))
    assert cli_main(["--config", str(config_file), "flow", "shipments.book", "--key", carrier, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["concurrency"]["running"] == 2 and shown["concurrency"]["waiting"] == 3

    # A confirmation ends a booking: the first waiting one starts, the others still wait.
    callback = _callback_id(client, first_two[0])
    assert callback is not None
    client.send_callback_success(callback, json.dumps({"reference": "R-1"}))
    _settle(deployed_target, lambda: _started(client, queue[0]), "the first waiting booking started")
    assert client.describe_execution(first_two[0])["Status"] == "SUCCEEDED"
    assert not _started(client, queue[1]) and not _started(client, queue[2])

    # A stop ends one too, and so does a stop of a waiting booking: it gives up its turn.
    assert client.stop_execution(queue[1])
    assert client.stop_execution(first_two[1])
    _settle(deployed_target, lambda: _started(client, queue[2]), "the last waiting booking started")
    # The stopped waiting booking never ran: its log only tells of the stop (as for any execution stopped
    # before its first run).
    stopped_events = [event["EventType"] for event in client.get_execution_history(queue[1])]
    assert stopped_events == ["ExecutionStarted", "ExecutionStopped"]
    status = client.flow_status("shipments.book", key=carrier)["concurrency"]
    assert status["running"] == 2 and status["waiting"] == 0
    assert sorted(status["holders"]) == sorted([queue[0], queue[2]])

    for each in (queue[0], queue[2], elsewhere):
        callback = _callback_id(client, each)
        assert callback is not None
        client.send_callback_success(callback, json.dumps({"reference": each[-4:]}))
    _settle(
        deployed_target,
        lambda: all(
            client.describe_execution(each)["Status"] == "SUCCEEDED" for each in (queue[0], queue[2])
        ),
        "every booking ended",
    )
    assert client.flow_status("shipments.book", key=carrier)["concurrency"]["running"] == 0
    assert client.describe_execution(queue[1])["Status"] == "STOPPED"


def test_starts_over_the_rate_are_delayed_to_the_period_not_dropped(
    deployed_target: DeployedTarget, deployed_client: StepwellClient, deployed_clock: VirtualClock
) -> None:
    run = uuid.uuid4().hex[:10]
    client = deployed_client
    deployed_clock.freeze()
    try:
        began = deployed_clock.now_epoch()
        started = [
            client.start_execution("flow.rated", {"customer": f"c-{run}", "n": n}, f"rated-{run}-{n}")
            for n in range(5)
        ]
        _settle(
            deployed_target,
            lambda: sum(client.describe_execution(each)["Status"] == "SUCCEEDED" for each in started) == 2,
            "two rated executions finished",
        )
        delayed = [each for each in started if client.describe_execution(each)["Status"] == "RUNNING"]
        assert len(delayed) == 3 and not any(_started(client, each) for each in delayed)
        due = deployed_target.due_timers(delayed)
        assert sorted(round(due[each] - began) for each in delayed) == [60, 60, 120]
        rate = client.flow_status("flow.rated", key=f"c-{run}")["rate"]
        assert rate["limit"] == 2 and rate["period"] == 60 and rate["recentStarts"] == 2

        for each in sorted(delayed, key=lambda execution_id: due[execution_id]):
            assert deployed_target.wake_when_due(each)
            _settle(
                deployed_target,
                lambda each=each: client.describe_execution(each)["Status"] == "SUCCEEDED",
                f"{each} finished after its delay",
            )
            history = client.get_execution_history(each)
            assert history[0]["EventType"] == "ExecutionStarted"
            assert history[0]["EventTimestamp"].timestamp() >= due[each] - 0.001
    finally:
        deployed_clock.thaw()
