"""S3 payload offload, the SQS work queue and wake-up scheduling against moto."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from stepwell.aws.dynamodb_store.due_wakeups import DynamoDbDueWakeUps, due_item_key
from stepwell.aws.payloads import (
    RETENTION_TAG_ENDED,
    RETENTION_TAG_KEY,
    PayloadError,
    S3PayloadStore,
    is_reference,
    reference_key,
)
from stepwell.aws.timers import (
    SqsWakeBatches,
    WakeScheduler,
    at_expression,
    invoke_message,
    is_early,
    schedule_name,
    schedule_prefix,
)
from stepwell.aws.work_queue import SqsWorkQueue
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock as EngineClock
from stepwell.config import LONG_WAIT_SWEEP, StepwellConfig
from stepwell.core.registry import Registry
from stepwell.core.wake_sweep import SweepRequest, WakeSweep
from stepwell.ports.due_wakeups import DUE_SHARDS, due_bucket, due_shard
from stepwell.testing.lifecycle import BucketLifecycle, ExpirationRule
from stepwell.testing.scheduler import VirtualClock
from stepwell.wiring.build import build_engine
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver

NOW = 1_800_000_000.0  # a fixed clock: wake-up routing depends only on due_at - now


class FixedClock:
    def now(self) -> float:
        return NOW


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


def _wakes(deployment: Deployment, kms_key_arn: str = "", dead_letter_arn: str = "") -> WakeScheduler:
    config = deployment.config
    return WakeScheduler(
        SqsWorkQueue(deployment.clients.sqs, config.work_queue_url),
        deployment.clients.scheduler,
        schedule_group=config.schedule_group_name,
        scheduler_role_arn=config.scheduler_role_arn,
        work_queue_arn=config.work_queue_arn,
        clock=lambda: NOW,
        kms_key_arn=kms_key_arn,
        dead_letter_arn=dead_letter_arn,
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


KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def test_long_wake_is_encrypted_with_the_customer_key_when_one_is_given(deployment: Deployment) -> None:
    group = deployment.config.schedule_group_name
    scheduler = deployment.clients.scheduler
    with_key = _wakes(deployment, kms_key_arn=KEY).schedule_wake("exec-key", NOW + 7200)
    without_key = _wakes(deployment).schedule_wake("exec-plain", NOW + 7200)
    assert scheduler.get_schedule(Name=with_key.schedule_name, GroupName=group).get("KmsKeyArn") == KEY
    assert "KmsKeyArn" not in scheduler.get_schedule(Name=without_key.schedule_name, GroupName=group)


def test_the_worker_takes_the_key_for_its_wake_ups_from_its_environment(deployment: Deployment) -> None:
    config = StepwellConfig.from_env({**deployment.config.to_env(), "STEPWELL_KMS_KEY_ARN": KEY})
    engine = build_engine(config, deployment.clients, Registry(), clock=FixedClock())
    engine.timers.schedule("exec-env", NOW + 7200)
    name = f"{schedule_prefix('exec-env')}{at_expression(NOW + 7200)[1]}"
    schedule = deployment.clients.scheduler.get_schedule(Name=name, GroupName=config.schedule_group_name)
    assert schedule["KmsKeyArn"] == KEY
    assert StepwellConfig.from_env(deployment.config.to_env()).kms_key_arn == ""


def test_long_wake_names_the_dead_letter_queue_when_one_is_given(deployment: Deployment) -> None:
    dlq_arn = deployment.config.dlq_arn
    assert dlq_arn.startswith("arn:aws:sqs:")
    wake = _wakes(deployment, dead_letter_arn=dlq_arn).schedule_wake("exec-dlq", NOW + 7200)
    schedule = deployment.clients.scheduler.get_schedule(
        Name=wake.schedule_name, GroupName=deployment.config.schedule_group_name
    )
    assert schedule["Target"]["DeadLetterConfig"] == {"Arn": dlq_arn}
    assert schedule["Target"]["Arn"] == deployment.config.work_queue_arn


def test_long_wake_has_no_dead_letter_queue_without_one(deployment: Deployment) -> None:
    wake = _wakes(deployment).schedule_wake("exec-no-dlq", NOW + 7200)
    schedule = deployment.clients.scheduler.get_schedule(
        Name=wake.schedule_name, GroupName=deployment.config.schedule_group_name
    )
    assert not schedule["Target"].get("DeadLetterConfig")


def test_the_worker_names_the_dlq_of_its_environment_for_its_wake_ups(deployment: Deployment) -> None:
    config = StepwellConfig.from_env(deployment.config.to_env())
    assert config.dlq_arn == deployment.config.dlq_arn != ""
    engine = build_engine(config, deployment.clients, Registry(), clock=FixedClock())
    engine.timers.schedule("exec-env-dlq", NOW + 7200)
    name = f"{schedule_prefix('exec-env-dlq')}{at_expression(NOW + 7200)[1]}"
    schedule = deployment.clients.scheduler.get_schedule(Name=name, GroupName=config.schedule_group_name)
    assert schedule["Target"]["DeadLetterConfig"] == {"Arn": deployment.config.dlq_arn}


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


def test_withdraw_deletes_only_the_schedule_no_longer_needed(
    deployment: Deployment, caplog: pytest.LogCaptureFixture
) -> None:
    wakes = _wakes(deployment)
    scheduler = deployment.clients.scheduler
    group = deployment.config.schedule_group_name
    deletes: list[str] = []
    scheduler.meta.events.register(
        "before-parameter-build.scheduler.DeleteSchedule", lambda params, **_: deletes.append(params["Name"])
    )

    def names() -> list[str]:
        return sorted(item["Name"] for item in scheduler.list_schedules(GroupName=group)["Schedules"])

    minute = at_expression(NOW + 7200)[1]
    wakes.schedule_wake("exec-w", minute - 30)
    wakes.schedule_wake("exec-w", NOW + 86400)
    wakes.schedule_wake("exec-near", NOW + 600)  # an SQS message: nothing to withdraw
    both = sorted([schedule_name("exec-w", minute - 30), schedule_name("exec-w", NOW + 86400)])
    assert names() == both

    wakes.withdraw("exec-w", minute - 30, keep=minute - 10)  # the one kept shares its schedule
    wakes.withdraw("exec-near", NOW + 600)  # not certain to be a schedule: no request
    assert (names(), deletes) == (both, [])

    wakes.withdraw("exec-w", minute - 30, keep=NOW + 86400)
    wakes.withdraw("exec-w", minute - 30)  # already gone (fired, or a stop deleted it): no error
    assert names() == [schedule_name("exec-w", NOW + 86400)]
    assert deletes == [schedule_name("exec-w", minute - 30)] * 2

    with Stubber(scheduler) as stub:  # a failure is logged, never raised: the schedule just fires
        stub.add_client_error("delete_schedule", "ThrottlingException", "slow down", 400)
        wakes.withdraw("exec-w", NOW + 86400)
    assert "could not delete the unneeded wake-up" in caplog.text and "ThrottlingException" in caplog.text
    assert names() == [schedule_name("exec-w", NOW + 86400)]


def test_long_wake_without_scheduler_settings_is_a_clear_error(deployment: Deployment) -> None:
    wakes = WakeScheduler(
        SqsWorkQueue(deployment.clients.sqs, deployment.config.work_queue_url),
        None,
        schedule_group="",
        scheduler_role_arn="",
        work_queue_arn="",
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


# The rules modules/payloads configures (the deployed test reads them from the deployed bucket instead).
ENDED_ONLY_RULES: dict[str, Any] = {
    "Rules": [
        {
            "ID": "expire-ended-executions",
            "Status": "Enabled",
            "Filter": {"Tag": {"Key": RETENTION_TAG_KEY, "Value": RETENTION_TAG_ENDED}},
            "Expiration": {"Days": 30},
        },
        {
            "ID": "abort-incomplete-uploads",
            "Status": "Enabled",
            "Filter": {},
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
        },
    ]
}
# The rule the module had before: every object expired 30 days after it was written.
EVERY_OBJECT_RULES: dict[str, Any] = {
    "Rules": [{"ID": "expire-with-retention", "Status": "Enabled", "Filter": {}, "Expiration": {"Days": 30}}]
}


def _tags(deployment: Deployment, reference: str) -> dict[str, str]:
    tag_set = deployment.clients.s3.get_object_tagging(
        Bucket=deployment.config.payload_bucket, Key=reference_key(reference)
    )["TagSet"]
    return {tag["Key"]: tag["Value"] for tag in tag_set}


def test_retire_tags_every_object_of_that_execution_only_and_keeps_their_content(
    deployment: Deployment,
) -> None:
    store = _payloads(deployment)
    mine = [store.put("exec-ended", "input", "a" * 10), store.put("exec-ended", "batch-3", "b")]
    other = store.put("exec-running", "input", "c")
    assert store.retire("exec-ended") == 2
    assert [_tags(deployment, reference) for reference in mine] == [
        {RETENTION_TAG_KEY: RETENTION_TAG_ENDED}
    ] * 2
    assert [store.get(reference) for reference in mine] == ["a" * 10, "b"]
    assert _tags(deployment, other) == {}
    assert store.retire("exec-ended") == 2  # again (a retried message): same tags, same content
    assert store.get(mine[0]) == "a" * 10


def _lifecycle(deployment: Deployment, rules: dict[str, Any]) -> BucketLifecycle:
    deployment.clients.s3.put_bucket_lifecycle_configuration(
        Bucket=deployment.config.payload_bucket,
        LifecycleConfiguration=rules,  # type: ignore[arg-type]
    )
    return BucketLifecycle(deployment.clients.s3, deployment.config.payload_bucket, VirtualClock())


def _exists(store: S3PayloadStore, reference: str) -> bool:
    try:
        store.get(reference)
    except PayloadError:
        return False
    return True


def test_running_payloads_never_expire_and_ended_ones_expire_retention_days_after_the_end(
    deployment: Deployment,
) -> None:
    store = _payloads(deployment)
    lifecycle = _lifecycle(deployment, ENDED_ONLY_RULES)
    running = store.put("exec-running", "input", "r")
    ended = store.put("exec-ended", "input", "e")
    with lifecycle.running():
        lifecycle.clock.advance(timedelta(days=400))
        assert _exists(store, running) and _exists(store, ended)
        store.retire("exec-ended")  # ends on day 400
        lifecycle.clock.advance(timedelta(days=29))
        assert _exists(store, ended)
        lifecycle.clock.advance(timedelta(days=2))  # past day 430, rounded up to midnight
    assert not _exists(store, ended)
    assert _exists(store, running)
    assert lifecycle.expired == [reference_key(ended)]


def test_the_old_rule_expires_a_running_executions_payload(deployment: Deployment) -> None:
    """The simulator applies whatever the bucket says: under the old match-all rule a payload of an
    execution that waits 31 days is gone while it still runs (the bug the tag filter fixes)."""
    store = _payloads(deployment)
    lifecycle = _lifecycle(deployment, EVERY_OBJECT_RULES)
    running = store.put("exec-running", "input", "r")
    with lifecycle.running():
        lifecycle.clock.advance(timedelta(days=29))
        assert _exists(store, running)
        lifecycle.clock.advance(timedelta(days=2))
    assert not _exists(store, running)


def test_expiration_rules_read_like_s3() -> None:
    rule = ExpirationRule.from_api(
        {
            "ID": "r",
            "Status": "Enabled",
            "Filter": {
                "And": {
                    "Prefix": "ex/",
                    "Tags": [{"Key": "k", "Value": "v"}],
                    "ObjectSizeGreaterThan": 10,
                    "ObjectSizeLessThan": 100,
                }
            },
            "Expiration": {"Days": 3},
        }
    )
    assert rule is not None
    assert rule.matches("ex/a", 50, {"k": "v", "other": "x"})
    assert not rule.matches("other/a", 50, {"k": "v"})
    assert not rule.matches("ex/a", 50, {"k": "w"})
    assert not rule.matches("ex/a", 10, {"k": "v"}) and not rule.matches("ex/a", 100, {"k": "v"})
    # Creation + days, rounded up to the next midnight UTC (an exact midnight stays).
    assert rule.expires_at(datetime(2030, 1, 1, 10, 30, tzinfo=UTC)) == datetime(2030, 1, 5, tzinfo=UTC)
    assert rule.expires_at(datetime(2030, 1, 1, tzinfo=UTC)) == datetime(2030, 1, 4, tzinfo=UTC)
    disabled = {"ID": "d", "Status": "Disabled", "Filter": {}, "Expiration": {"Days": 1}}
    abort_only = ENDED_ONLY_RULES["Rules"][1]
    assert ExpirationRule.from_api(disabled) is None and ExpirationRule.from_api(abort_only) is None


# --- long_wait_wakeups = "sweep": due items on the executions table, sent by the sweep ---


class MovingClock:
    def __init__(self, now: float) -> None:
        self.t = now

    def now(self) -> float:
        return self.t


def _due_store(deployment: Deployment) -> DynamoDbDueWakeUps:
    config = deployment.config
    return DynamoDbDueWakeUps(
        deployment.clients.dynamodb,
        executions_table=config.executions_table,
        operations_table=config.operations_table,
        coordination_table=config.coordination_table,
        subject_index=config.subject_index_name,
    )


def _swept_wakes(deployment: Deployment) -> tuple[WakeScheduler, DynamoDbDueWakeUps]:
    wakes, due = _wakes(deployment), _due_store(deployment)
    wakes.sweep_long_waits(due)
    return wakes, due


def _pending(due: DynamoDbDueWakeUps, *execution_ids: str) -> list[tuple[str, float]]:
    found = []
    for shard in {due_shard(eid) for eid in execution_ids}:
        for bucket in range(due_bucket(NOW), due_bucket(NOW + 86400) + 1):
            page = due.due_page(shard, bucket, until=NOW + 86400, limit=100)
            found += [(wake.execution_id, wake.due_at) for wake in page]
    return sorted(found)


def test_a_long_wait_in_sweep_mode_is_a_due_item_which_the_sweep_sends_to_the_second(
    deployment: Deployment,
) -> None:
    wakes, due = _swept_wakes(deployment)
    eid = "default#orders#o-1/abc"
    assert wakes.schedule_wake(eid, NOW + 7200.25).via == "sweep"
    assert wakes.schedule_wake(eid, NOW + 600).via == "sqs"  # short waits stay SQS delays
    scheduler = deployment.clients.scheduler
    assert scheduler.list_schedules(GroupName=deployment.config.schedule_group_name)["Schedules"] == []
    assert _pending(due, eid) == [(eid, NOW + 7200.25)]
    # No index holds it: it carries none of their keys.
    item = deployment.clients.dynamodb.get_item(
        TableName=deployment.config.executions_table, Key=due_item_key(eid, NOW + 7200.25)
    )["Item"]
    assert set(item) == {"contextKey", "instanceId", "eid", "due"}

    sent: list[dict[str, Any]] = []
    sqs = deployment.clients.sqs
    sqs.meta.events.register(
        "before-parameter-build.sqs.SendMessageBatch", lambda params, **_: sent.append(params)
    )
    clock = MovingClock(NOW + 7200.25 - 99.5)
    sweep = WakeSweep(
        due, SqsWakeBatches(sqs, deployment.config.work_queue_url), wakes_queue(deployment), clock
    )
    report = sweep.run(SweepRequest())

    assert report.sent == 1 and _pending(due, eid) == []
    (entry,) = [entry for params in sent for entry in params["Entries"]]
    assert entry["DelaySeconds"] == 100  # the rest of the wait in whole seconds, never early
    assert json.loads(entry["MessageBody"]) == invoke_message(eid, NOW + 7200.25)
    state = due.sweep_state()
    assert state is not None and len(state.watermarks) == DUE_SHARDS


def wakes_queue(deployment: Deployment) -> SqsWorkQueue:
    return SqsWorkQueue(deployment.clients.sqs, deployment.config.work_queue_url)


def test_withdraw_and_cancel_all_delete_the_due_item_by_its_key(deployment: Deployment) -> None:
    wakes, due = _swept_wakes(deployment)
    stopped, timed_out, other = "default#orders#o-2/a", "default#orders#o-3/b", "default#orders#o-4/c"
    wakes.schedule_wake(stopped, NOW + 7200)
    wakes.schedule_wake(stopped, NOW + 86400)
    wakes.schedule_wake(timed_out, NOW + 3600)
    wakes.schedule_wake(other, NOW + 3600)

    wakes.withdraw(stopped, NOW + 7200, keep=NOW + 86400)
    assert _pending(due, stopped) == [(stopped, NOW + 86400)]
    # A time-out or a delete drops the wake-up the execution's last run armed (its coordination record's).
    deployment.clients.dynamodb.put_item(
        TableName=deployment.config.coordination_table,
        Item={"key": {"S": "lease#" + timed_out}, "w": {"N": str(NOW + 3600)}},
    )
    wakes.cancel_all(timed_out)
    assert _pending(due, timed_out, other) == [(other, NOW + 3600)]


def test_sweep_mode_calls_scheduler_only_for_wake_ups_that_were_schedules(deployment: Deployment) -> None:
    """A withdrawn or stopped wake-up that was a due item makes no Scheduler request; one made as a schedule
    before the switch to sweep mode is still deleted."""
    scheduler, group = deployment.clients.scheduler, deployment.config.schedule_group_name
    calls: list[str] = []
    for operation in ("DeleteSchedule", "ListSchedules"):
        scheduler.meta.events.register(
            f"before-parameter-build.scheduler.{operation}",
            lambda operation=operation, **_: calls.append(operation),
        )
    before = _wakes(deployment)  # schedules mode, before the switch
    before.schedule_wake("old-w", NOW + 86400)
    before.schedule_wake("old-stop", NOW + 86400)
    wakes, due = _swept_wakes(deployment)
    wakes.schedule_wake("new-w", NOW + 86400)
    wakes.schedule_wake("new-stop", NOW + 86400)
    for execution_id in ("old-stop", "new-stop"):  # the wake-up each one's last run armed
        deployment.clients.dynamodb.put_item(
            TableName=deployment.config.coordination_table,
            Item={"key": {"S": "lease#" + execution_id}, "w": {"N": str(NOW + 86400)}},
        )

    wakes.withdraw("new-w", NOW + 86400)
    wakes.cancel_all("new-stop")
    assert calls == [] and _pending(due, "new-w", "new-stop") == []

    wakes.withdraw("old-w", NOW + 86400)
    wakes.cancel_all("old-stop")
    assert calls == ["DeleteSchedule", "ListSchedules", "DeleteSchedule"]
    assert scheduler.list_schedules(GroupName=group)["Schedules"] == []


def test_the_sweep_state_on_dynamodb_moves_forward_only_and_leases_one_holder(deployment: Deployment) -> None:
    due = _due_store(deployment)
    assert due.sweep_state() is None
    due.advance_watermark(3, 500)
    due.advance_watermark(3, 499)  # a slower sweep's: ignored
    assert due.take_sweep_lease(3, owner="a", now=NOW, until=NOW + 60)
    assert not due.take_sweep_lease(3, owner="b", now=NOW + 30, until=NOW + 90)
    assert due.take_sweep_lease(3, owner="a", now=NOW + 30, until=NOW + 90)  # renewed by its holder
    due.release_sweep_lease(3, "b")  # not its lease: nothing happens
    state = due.sweep_state()
    assert state is not None and state.watermarks == {3: 500} and state.leases[3].owner == "a"
    assert due.take_sweep_lease(3, owner="b", now=NOW + 91, until=NOW + 150)  # expired: taken over
    due.release_sweep_lease(3, "b")
    state = due.sweep_state()
    assert state is not None and state.leases == {}


@durable_execution
def _two_day_sleeper(event: Any, context: DurableContext) -> str:
    context.wait(Duration.from_seconds(2 * 86400), name="two-days")
    return "awake"


def test_the_worker_in_sweep_mode_keeps_long_waits_as_due_items_and_the_sweep_wakes_them(
    deployment: Deployment,
) -> None:
    registry = Registry()
    registry.register("sleeper", _two_day_sleeper)
    config = dataclasses.replace(deployment.config, long_wait_wakeups=LONG_WAIT_SWEEP)
    clock = EngineClock()
    client = StepwellClient(config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(config, deployment.clients, registry=registry, clock=clock)
    driver = QueueDriver(deployment, runtime, clock)
    woken = client.start_execution("sleeper", None, execution_name="woken")
    stopped = client.start_execution("sleeper", None, execution_name="stopped")
    driver.run_until_quiet(fire_schedules=False)

    scheduler = deployment.clients.scheduler
    assert scheduler.list_schedules(GroupName=config.schedule_group_name)["Schedules"] == []
    due, table = _due_store(deployment), config.executions_table
    armed = {eid: _armed(deployment, eid) for eid in (woken, stopped)}

    def kept(eid: str) -> bool:
        item = deployment.clients.dynamodb.get_item(TableName=table, Key=due_item_key(eid, armed[eid]))
        return "Item" in item

    assert kept(woken) and kept(stopped)
    # A client of the sweep deployment (client_config's long_wait_wakeups): its stop drops the due item.
    StepwellClient(config, deployment.clients, registry=registry, clock=clock).stop_execution(stopped)
    driver.run_until_quiet(fire_schedules=False)
    assert not kept(stopped) and client.describe_execution(stopped)["Status"] == "STOPPED"

    clock.advance_to(armed[woken] + 0.5)
    result = runtime.handle_body({"kind": "wake-sweep"})
    assert result.details["sent"] == 1
    driver.run_until_quiet(fire_schedules=False)
    assert client.describe_execution(woken)["Status"] == "SUCCEEDED" and not kept(woken)
    assert due.sweep_state() is not None


def _armed(deployment: Deployment, execution_id: str) -> float:
    item = deployment.clients.dynamodb.get_item(
        TableName=deployment.config.coordination_table, Key={"key": {"S": "lease#" + execution_id}}
    )["Item"]
    return float(item["w"]["N"])
