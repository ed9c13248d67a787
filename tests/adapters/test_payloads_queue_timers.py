"""S3 payload offload, the SQS work queue and wake-up scheduling against moto."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from stepwell.payloads import PayloadError, S3PayloadStore, is_reference
from stepwell.timers import WakeScheduler, at_expression, invoke_message, is_early, schedule_prefix
from stepwell.work_queue import SqsWorkQueue

from .deployment import Deployment

NOW = 1_800_000_000.0  # a fixed clock: wake-up routing depends only on due_at - now


def _payloads(deployment: Deployment) -> S3PayloadStore:
    return S3PayloadStore(deployment.clients.s3, deployment.config.payload_bucket)


def _receive_all(deployment: Deployment, queue_url: str) -> list[dict[str, object]]:
    response = deployment.clients.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
    return [json.loads(message["Body"]) for message in response.get("Messages", [])]


def test_text_round_trips_through_s3_as_a_reference(deployment: Deployment) -> None:
    store = _payloads(deployment)
    text = "é" * 2000
    reference = store.put("default#wf#s/1", "result", text)
    assert is_reference(reference)
    assert store.get(reference) == text
    assert store.get_bytes(reference) == text.encode("utf-8")


def test_same_payload_twice_is_one_object_and_execution_delete_removes_only_its_own(
    deployment: Deployment,
) -> None:
    store = _payloads(deployment)
    first = store.put("exec-a", "input", "x" * 10)
    assert store.put("exec-a", "input", "x" * 10) == first
    store.put_bytes("exec-a", "result", b"\xff")
    other = store.put("exec-b", "input", "z")
    assert store.delete_execution("exec-a") == 2
    assert store.get(other) == "z"
    with pytest.raises(PayloadError, match="missing from bucket"):
        store.get(first)


def test_bad_references_and_labels_are_refused(deployment: Deployment) -> None:
    store = _payloads(deployment)
    with pytest.raises(PayloadError, match="'plain' is not a payload reference"):
        store.get("plain")
    with pytest.raises(ValueError, match="payload label 'a/b'"):
        store.put("exec", "a/b", "")


def test_queue_sends_single_and_batched_messages(deployment: Deployment) -> None:
    queue = SqsWorkQueue(deployment.clients.sqs, deployment.config.work_queue_url)
    queue.send({"kind": "reconcile"})
    assert queue.send_many([invoke_message(f"e{i}") for i in range(12)]) == 12
    received: list[dict[str, object]] = []
    for _ in range(5):
        received.extend(_receive_all(deployment, deployment.config.work_queue_url))
    assert {"kind": "reconcile"} in received
    assert sorted(str(m["executionId"]) for m in received if m["kind"] == "invoke") == sorted(
        f"e{i}" for i in range(12)
    )
    calls = deployment.clients.counter.snapshot()["calls"]
    assert calls["sqs.SendMessageBatch"] == 2


def test_queue_refuses_messages_without_kind_and_bad_delays(deployment: Deployment) -> None:
    queue = SqsWorkQueue(deployment.clients.sqs, deployment.config.work_queue_url)
    with pytest.raises(ValueError, match="needs a 'kind'"):
        queue.send({"executionId": "x"})
    with pytest.raises(ValueError, match=r"SQS delay must be 0\.\.900 seconds, got 901"):
        queue.send({"kind": "reconcile"}, delay_seconds=901)


def _wakes(deployment: Deployment) -> WakeScheduler:
    config = deployment.config
    return WakeScheduler(
        SqsWorkQueue(deployment.clients.sqs, config.work_queue_url),
        deployment.clients.scheduler,
        config.schedule_group_name,
        config.scheduler_role_arn,
        config.work_queue_arn,
        clock=lambda: NOW,
    )


def test_short_wake_goes_to_sqs_with_delay(deployment: Deployment) -> None:
    wake = _wakes(deployment).schedule_wake("exec-1", NOW + 899.2)
    assert (wake.via, wake.delay_seconds) == ("sqs", 900)
    assert _wakes(deployment).schedule_wake("exec-1", NOW - 5).delay_seconds == 0


def test_long_wake_is_a_self_deleting_schedule_rounded_up_to_the_minute(deployment: Deployment) -> None:
    due = NOW + 3 * 86400 + 17.5
    wake = _wakes(deployment).schedule_wake("default#orders#o-1/abc", due)
    assert wake.via == "scheduler"
    schedule = deployment.clients.scheduler.get_schedule(
        Name=wake.schedule_name, GroupName=deployment.config.schedule_group_name
    )
    expression, minute = at_expression(due)
    assert schedule["ScheduleExpression"] == expression
    assert minute >= due and minute - due < 60
    assert schedule["ActionAfterCompletion"] == "DELETE"
    assert schedule["Target"]["Arn"] == deployment.config.work_queue_arn
    assert schedule["Target"]["RoleArn"] == deployment.config.scheduler_role_arn
    body = json.loads(schedule["Target"]["Input"])
    assert body == {"kind": "invoke", "executionId": "default#orders#o-1/abc", "dueAt": round(due, 3)}
    # The same wake-up again is not an error and not a second schedule.
    assert _wakes(deployment).schedule_wake("default#orders#o-1/abc", due).schedule_name == wake.schedule_name


def test_at_expression_never_fires_before_due() -> None:
    assert at_expression(120.0) == ("at(1970-01-01T00:02:00)", 120)
    assert at_expression(120.001) == ("at(1970-01-01T00:03:00)", 180)


def test_early_arrival_is_detected() -> None:
    message = invoke_message("e", due_at=NOW + 30)
    assert is_early(message, NOW)
    assert not is_early(message, NOW + 29.5)
    assert not is_early(invoke_message("e"), NOW)


def test_cancel_all_deletes_only_that_executions_schedules(deployment: Deployment) -> None:
    wakes = _wakes(deployment)
    wakes.schedule_wake("exec-stop", NOW + 7200)
    wakes.schedule_wake("exec-stop", NOW + 86400)
    wakes.schedule_wake("exec-keep", NOW + 7200)
    assert wakes.cancel_schedules("exec-stop") == 2
    names = [
        item["Name"]
        for item in deployment.clients.scheduler.list_schedules(
            GroupName=deployment.config.schedule_group_name
        )["Schedules"]
    ]
    assert names == [f"{schedule_prefix('exec-keep')}{at_expression(NOW + 7200)[1]}"]


def test_long_wake_without_scheduler_settings_is_a_clear_error(deployment: Deployment) -> None:
    wakes = WakeScheduler(
        SqsWorkQueue(deployment.clients.sqs, deployment.config.work_queue_url),
        None,
        "",
        "",
        "",
        clock=lambda: NOW,
    )
    with pytest.raises(ValueError, match="more than 900 s ahead needs EventBridge Scheduler"):
        wakes.schedule("e", NOW + 901)


def test_cancel_without_list_permission_is_logged_not_raised(
    deployment: Deployment, caplog: pytest.LogCaptureFixture
) -> None:
    wakes = _wakes(deployment)
    with Stubber(deployment.clients.scheduler) as stub:
        stub.add_client_error("list_schedules", "AccessDeniedException", "not authorized", 400)
        wakes.cancel_all("exec-stop")
        stub.add_client_error("list_schedules", "ValidationException", "bad group", 400)
        with pytest.raises(ClientError, match="bad group"):
            wakes.cancel_all("exec-stop")
    assert "cannot delete the pending schedules of exec-stop (AccessDeniedException" in caplog.text
