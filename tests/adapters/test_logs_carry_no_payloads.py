"""Log lines name executions, messages and error types, never the data they carry: a crash's message and
a refused message's body may hold a customer's data (they stay in the history and the DLQ)."""

from __future__ import annotations

import json
import logging

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from botocore.exceptions import ClientError
from stepwell.clock import VirtualClock
from stepwell.core.registry import Registry
from stepwell.testing.local import LocalStepwell
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment

SECRET = "card-4111-1111-1111-1111"


def test_a_crashed_invocation_logs_its_error_type_not_its_message(caplog: pytest.LogCaptureFixture) -> None:
    @durable_execution
    def crashes_once(event: object, context: DurableContext) -> str:
        def dies(_: object) -> str:
            if not crashed:
                crashed.append(True)
                raise SystemExit(f"could not charge {SECRET}")
            return "charged"

        return context.step(dies, name="charge")

    crashed: list[bool] = []
    local = LocalStepwell()
    local.register("crashes-once", crashes_once)
    caplog.set_level(logging.INFO)
    execution_id = local.start("crashes-once", {"card": SECRET})

    local.run_to_completion(execution_id)

    assert f"invocation of {execution_id} crashed: Runtime.ExitError" in caplog.text
    assert SECRET not in caplog.text


def test_a_message_left_to_the_dlq_is_logged_by_id_not_by_body(
    deployment: Deployment, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = EntryRuntime.from_config(
        deployment.config, deployment.clients, registry=Registry(), clock=VirtualClock()
    )
    failure = {
        "version": "0",
        "id": "e-9",
        "source": "stepwell.client",
        "detail-type": "stepwell.callback.failure",
        "detail": {"callbackId": "cb-1", "error": f"declined {SECRET}"},
    }
    records = [
        {"messageId": "m-1", "body": json.dumps({"kind": "invoke", "executionId": SECRET})},
        {"messageId": "m-2", "body": json.dumps(failure)},
    ]
    caplog.set_level(logging.INFO)

    response = runtime.handle_sqs_batch(records)

    assert response == {"batchItemFailures": [{"itemIdentifier": "m-1"}, {"itemIdentifier": "m-2"}]}
    assert "message m-1 is not an engine message, leaving it to the DLQ (InvalidMessage)" in caplog.text
    assert "message m-2 is not an engine message" in caplog.text
    assert SECRET not in caplog.text


def test_a_transient_failure_is_logged_by_kind_and_place_not_by_text(
    deployment: Deployment, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = EntryRuntime.from_config(
        deployment.config, deployment.clients, registry=Registry(), clock=VirtualClock()
    )

    def throttled(body: object, context: object = None) -> None:
        raise ClientError(
            {"Error": {"Code": "ThrottlingException", "Message": f"slow down for {SECRET}"}}, "Query"
        )

    monkeypatch.setattr(runtime, "handle_body", throttled)
    caplog.set_level(logging.INFO)

    response = runtime.handle_sqs_batch([{"messageId": "m-3", "body": json.dumps({"kind": "reconcile"})}])

    assert response == {"batchItemFailures": [{"itemIdentifier": "m-3"}]}
    assert "message m-3 failed (ClientError ThrottlingException); SQS will deliver it again" in caplog.text
    assert "in throttled" in caplog.text  # where it was raised
    assert SECRET not in caplog.text
