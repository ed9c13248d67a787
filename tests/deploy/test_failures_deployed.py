"""Failures on the deployed path, on each backend: duplicated messages, a worker process killed
mid-invocation, two workers racing on one execution, a malformed message in a batch. The workflows are
tests/deploy/workflows/stepwell_test_workflows.py, packaged into the stack by tests/deploy/conftest.py;
their step bodies count their runs in the coordination table, so the tests see which bodies ran and how
often.

(Injected throttling and transient DynamoDB and SQS errors are covered in-process on moto's adapters:
tests/adapters.)
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from typing import Any

import pytest
from deployed_backend import FINISHED, DeployedTarget
from stepwell.client import StepwellClient
from stepwell.testing.backends import Backend
from stepwell.testing.deployed_fixtures import DeployedStack
from stepwell.testing.lambda_runtime import LambdaRuntime

from deploy.queues import short_visibility, take_marked

MARKERS = "test-marker#"
WAIT_SECONDS = 240.0


def _markers(stack: DeployedStack, run: str, steps: tuple[str, ...]) -> Counter[str]:
    """How many times each of a run's step bodies ran (counters the workflows keep, one item a step)."""
    counts: Counter[str] = Counter()
    dynamodb = stack.backend.client("dynamodb")
    for step in steps:
        item = dynamodb.get_item(
            TableName=stack.client_config["coordination_table"],
            Key={"key": {"S": f"{MARKERS}{run}#ran#{step}"}},
            ConsistentRead=True,
        ).get("Item")
        if item is not None:
            counts[step] = int(item["n"]["N"])
    return counts


def _lease_expiry(target: DeployedTarget, execution_id: str) -> float | None:
    item = target.dynamodb.get_item(
        TableName=target.config["coordination_table"], Key={"key": {"S": f"lease#{execution_id}"}}
    ).get("Item")
    return float(item["exp"]["N"]) if item and "exp" in item else None


def _drive(target: DeployedTarget, execution_id: str) -> dict[str, Any]:
    """Run the execution to its end: process the queue; when it only waits, skip the virtual clock to
    its wake-up and deliver it, or past a dead worker's lease (SQS delivers the message again: the
    entry's busy retry takes the lease over)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        target.process_queue()
        description = target.client.describe_execution(execution_id)
        if description["Status"] in FINISHED:
            return description
        assert time.monotonic() < deadline, f"never finished: {json.dumps(description, default=str)}"
        lease = _lease_expiry(target, execution_id)
        if lease is not None and lease > target.clock.now_epoch():
            # The lease of a worker that died: once it expires, the next delivery takes it over.
            target.clock.advance_seconds(lease - target.clock.now_epoch() + 1)
        elif not target.wake_when_due(execution_id):
            time.sleep(0.2)


def _send(target: DeployedTarget, body: dict[str, Any]) -> None:
    target.sqs.send_message(QueueUrl=target.config["work_queue_url"], MessageBody=json.dumps(body))


def _history_counts(client: StepwellClient, execution_id: str) -> Counter[tuple[str, str]]:
    return Counter(
        (str(event.get("EventType")), str(event.get("Name", "")))
        for event in client.get_execution_history(execution_id)
    )


def _callback_id(client: StepwellClient, execution_id: str) -> str | None:
    for event in client.get_execution_history(execution_id):
        if event.get("EventType") == "CallbackStarted":
            return str(event["CallbackStartedDetails"]["CallbackId"])
    return None


def test_every_message_delivered_twice_changes_nothing(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    """Start, wake-up and callback messages each arrive twice: each step body runs once and the history
    holds each event once."""
    run = uuid.uuid4().hex[:12]
    execution_id = deployed_client.start_execution("failures.sequence", {"run": run}, f"dup-{run}")
    _send(deployed_target, {"kind": "invoke", "executionId": execution_id})  # the start, again
    deployed_target.process_queue()
    timer = deployed_target.due_timers([execution_id])[execution_id]
    deployed_target.clock.advance_seconds(max(0.0, timer - deployed_target.clock.now_epoch()) + 0.001)
    for _ in range(2):  # the wake-up, twice
        deployed_target.send_invoke(execution_id, timer)
    deployed_target.nudged.add((execution_id, timer))
    deadline = time.monotonic() + WAIT_SECONDS
    while (callback_id := _callback_id(deployed_client, execution_id)) is None:
        description = deployed_client.describe_execution(execution_id)
        assert description["Status"] == "RUNNING", json.dumps(description, default=str)
        assert time.monotonic() < deadline, "the callback never started"
        deployed_target.process_queue()
    deployed_client.send_callback_success(callback_id, "approved")
    # The same callback again, through the bus (as a retried sender would), and its invoke again.
    deployed_client.publish_callback_event("success", callback_id, "approved")
    _send(deployed_target, {"kind": "invoke", "executionId": execution_id})
    description = _drive(deployed_target, execution_id)

    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    assert json.loads(description["Result"]) == {
        "first": f"first-{run}",
        "approval": "approved",
        "second": f"second-{run}",
    }
    assert _markers(deployed_stack, run, ("first", "second")) == {"first": 1, "second": 1}
    counts = _history_counts(deployed_client, execution_id)
    assert counts[("StepSucceeded", "first")] == counts[("StepSucceeded", "second")] == 1
    assert counts[("WaitSucceeded", "")] == 1
    assert counts[("CallbackSucceeded", "approval")] == 1
    assert counts[("ExecutionSucceeded", "")] == 1


def test_a_worker_killed_mid_invocation_resumes_with_each_result_recorded_once(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    """The third step kills the worker's process (after two checkpointed steps): the message comes back,
    finds the dead worker's lease and backs off; once the lease expires (virtual time) the next delivery
    takes it over and resumes the execution; the two finished steps are not run again."""
    run = uuid.uuid4().hex[:12]
    config = deployed_stack.client_config
    with short_visibility(
        deployed_stack.backend, config["work_queue_url"], 2, config["worker_function_name"]
    ):
        execution_id = deployed_client.start_execution("failures.crash_once", {"run": run}, f"crash-{run}")
        description = _drive(deployed_target, execution_id)

    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    assert json.loads(description["Result"]) == [f"alpha-{run}", f"beta-{run}", f"gamma-{run}"]
    # alpha and beta were checkpointed before the crash; gamma's body ran again after it.
    assert _markers(deployed_stack, run, ("alpha", "beta", "gamma")) == {"alpha": 1, "beta": 1, "gamma": 2}
    counts = _history_counts(deployed_client, execution_id)
    for name in ("alpha", "beta", "gamma"):
        assert counts[("StepSucceeded", name)] == 1, (name, counts)


def _invoke_event(target: DeployedTarget, execution_id: str) -> dict[str, Any]:
    """An SQS event carrying one invoke message, as the work queue's mapping delivers it."""
    body = json.dumps({"kind": "invoke", "executionId": execution_id})
    return {
        "Records": [
            {
                "messageId": str(uuid.uuid4()),
                "receiptHandle": "direct-invoke",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": target.config["work_queue_arn"],
            }
        ]
    }


def test_two_workers_racing_on_one_execution_one_proceeds_the_other_backs_off(
    stepwell_backend: Backend,
    deployed_stack: DeployedStack,
    deployed_target: DeployedTarget,
    deployed_client: StepwellClient,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Worker 1 holds the execution's lease inside a step; worker 2 (another execution environment)
    gets a message for the same execution meanwhile: it runs nothing and re-enqueues the message for
    later. The execution then completes with its step run once."""
    config = deployed_stack.client_config
    run = uuid.uuid4().hex[:12]
    execution_id = deployed_client.start_execution("failures.hold", {"run": run}, f"race-{run}")
    first_worker_done = threading.Event()
    errors: list[BaseException] = []

    def first_worker() -> None:
        try:
            deployed_target.process_queue()  # moto: the harness's runtime; LocalStack: its own poller
        except BaseException as error:  # reported by the main thread
            errors.append(error)
        finally:
            first_worker_done.set()

    thread = threading.Thread(target=first_worker, name="first-worker")
    thread.start()
    second: LambdaRuntime | None = None
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while _markers(deployed_stack, run, ("held",))["held"] == 0:
            assert time.monotonic() < deadline and not first_worker_done.is_set(), (
                f"the first worker never entered the step: {errors}"
            )
            time.sleep(0.1)
        event = _invoke_event(deployed_target, execution_id)
        if stepwell_backend.runs_lambda_code:
            response = stepwell_backend.client("lambda").invoke(
                FunctionName=config["worker_function_name"], Payload=json.dumps(event).encode()
            )
            assert "FunctionError" not in response, response["Payload"].read()
            answer = json.loads(response["Payload"].read())
        else:
            second = LambdaRuntime(
                stepwell_backend.client,
                stepwell_backend.lambda_code,
                stepwell_backend.environment(),
                tmp_path_factory.mktemp("second-worker"),
                region=stepwell_backend.region,
                clock_offset=deployed_target.clock.offset_seconds,  # type: ignore[attr-defined]
            )
            result = second.invoke(config["worker_function_name"], event)
            assert result.succeeded, result.error
            answer = result.payload
        # The second worker backed off: nothing failed, nothing ran twice, the execution is still held.
        assert answer == {"batchItemFailures": []}
        assert _markers(deployed_stack, run, ("held",))["held"] == 1
        assert deployed_client.describe_execution(execution_id)["Status"] == "RUNNING"
    finally:
        deployed_stack.backend.client("dynamodb").put_item(
            TableName=config["coordination_table"], Item={"key": {"S": f"{MARKERS}{run}#release"}}
        )
        thread.join()
        if second is not None:
            second.close()
    assert not errors, errors
    description = _drive(deployed_target, execution_id)
    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    assert json.loads(description["Result"]) == f"held-{run}"
    assert _markers(deployed_stack, run, ("held",)) == {"held": 1}
    assert _history_counts(deployed_client, execution_id)[("StepSucceeded", "held")] == 1


def test_a_malformed_message_ends_in_the_dlq_and_nothing_else_in_its_batch_is_lost(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    config = deployed_stack.client_config
    run = uuid.uuid4().hex[:12]
    marker = f"malformed-{run}"
    with short_visibility(
        deployed_stack.backend, config["work_queue_url"], 1, config["worker_function_name"]
    ):
        sqs = deployed_stack.backend.client("sqs")
        executions = [
            deployed_client.start_execution(
                "orders.confirm", {"order_id": f"{run}-{n}", "lines": []}, f"{run}-{n}"
            )
            for n in range(3)
        ]
        sqs.send_message(QueueUrl=config["work_queue_url"], MessageBody=json.dumps({"marker": marker}))
        sqs.send_message(QueueUrl=config["work_queue_url"], MessageBody="not json at all " + marker)
        descriptions = [_drive(deployed_target, execution_id) for execution_id in executions]
        dead = take_marked(deployed_stack.backend, config["dlq_url"], marker, 2, WAIT_SECONDS)
    assert [d["Status"] for d in descriptions] == ["SUCCEEDED"] * 3
    assert sorted(dead) == sorted([json.dumps({"marker": marker}), "not json at all " + marker])
