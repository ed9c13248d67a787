"""Work-queue messages that can never succeed are InvalidMessage (left to the DLQ), never a failure SQS
delivers again; and the first delivery of an event whose start the engine refuses is not a duplicate."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import workflows
from stepwell.core.worker import parse_invoke_message
from stepwell.errors import InvalidMessage
from stepwell.testing.local import LocalStepwell
from stepwell.wiring.entry import EntryRuntime, decode_body
from stepwell.wiring.events import CALLBACK_EVENT_SOURCE, CALLBACK_SUCCESS

from tests.definitions.harness import Harness


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"a":' * 100_000, "nested too deeply"),
        ('{"kind": "invoke", "executionId": "d#w#s/i", "dueAt": NaN}', "NaN is not JSON"),
        ('{"kind": "invoke", "executionId": "d#w#s/i", "dueAt": Infinity}', "Infinity is not JSON"),
    ],
)
def test_a_body_nested_too_deeply_or_with_nan_is_an_invalid_message(text: str, problem: str) -> None:
    with pytest.raises(InvalidMessage, match=problem):
        decode_body(text)


def test_such_a_body_is_left_to_the_dlq_not_delivered_again(
    stepwell_local: LocalStepwell, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = EntryRuntime(stepwell_local.engine)
    with caplog.at_level(logging.ERROR):
        answer = runtime.handle_event({"Records": [{"messageId": "m1", "body": "[" * 100_000}]})
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert "leaving it to the DLQ (InvalidMessage)" in caplog.text
    assert "SQS will deliver it again" not in caplog.text


@pytest.mark.parametrize("due_at", [float("inf"), float("nan"), 1e12, 10**20, -1, True, "soon"])
def test_an_invoke_message_whose_due_at_is_no_date_is_an_invalid_message(due_at: Any) -> None:
    body = {"kind": "invoke", "executionId": "d#w#s/i", "dueAt": due_at}
    with pytest.raises(InvalidMessage, match=r"bad dueAt .*: epoch seconds from 0 to 253402300799"):
        parse_invoke_message(body)


def test_an_invoke_message_due_up_to_year_9999_parses() -> None:
    for due_at in (0, 1_700_000_000.5, 253402300799):
        body = {"kind": "invoke", "executionId": "d#w#s/i", "dueAt": due_at}
        assert parse_invoke_message(body).due_at == float(due_at)


@pytest.mark.parametrize("result", [float("nan"), "\ud800", "ok \udfff"])
def test_a_bus_callback_event_with_a_result_that_cannot_be_sent_is_an_invalid_message(
    stepwell_local: LocalStepwell, result: Any
) -> None:
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    callback_id = stepwell_local.callback_id(execution_id, "approval")
    event = {
        "version": "0",
        "id": "evt-1",
        "detail-type": CALLBACK_SUCCESS,
        "source": CALLBACK_EVENT_SOURCE,
        "detail": {"callbackId": callback_id, "result": result},
    }
    with pytest.raises(InvalidMessage, match=f"{CALLBACK_SUCCESS} event 'evt-1': callback result"):
        EntryRuntime(stepwell_local.engine).handle_body(event)
    # Nothing was completed: the callback still takes a good result.
    stepwell_local.engine.send_callback_success(callback_id, json.dumps("yes"))
    stepwell_local.run_until_idle()
    assert stepwell_local.describe(execution_id)["Status"] == "SUCCEEDED"


def test_the_first_delivery_of_an_event_whose_start_fails_is_processed_and_a_repeat_a_duplicate(
    harness: Harness,
) -> None:
    harness.put(
        {
            "schemaVersion": 1,
            "id": "orders",
            "nodes": [{"id": "t", "type": "trigger", "event": "paid"}, {"id": "e", "type": "end"}],
            "edges": [{"from": "t", "to": "e"}],
        }
    )
    first = harness.send("paid", "u1", {"amount": float("nan")}, event_id="evt-nan")
    assert first.status == "processed" and first.repeats == 0
    assert "node 't' (trigger): input of workflow" in first.skipped[0]
    assert harness.context("orders", "u1").status == "FAILED"

    again = harness.send("paid", "u1", {"amount": float("nan")}, event_id="evt-nan")
    assert again.status == "duplicate" and again.repeats == 1
    assert len(harness.runtime.contexts.get_contexts("acme", "orders", "u1")) == 1


@pytest.fixture
def harness() -> Harness:
    return Harness()
