"""A deploy in the middle of running executions, on each backend.

The stack starts with `stepwell_versioned` v1 (tests/deploy/workflows/versions/v1.py). Executions start
and wait a day; then Terraform applies v2 (a step renamed and a step inserted before the wait), which
publishes a new version of the worker and moves the `live` alias the queue's mapping invokes. Executions
pinned to v1 are forwarded to v1 and finish with v1's results; new ones run v2; an explicit upgrade of a
compatible execution finishes on v2 and its history records the move; an upgrade of an incompatible one
fails it with the SDK's non-determinism error naming the operation. Afterwards the old version, no
longer needed, is pruned.

It re-applies the session's shared stack: only this module's code changes, so the tests after it run on
the new version as before.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from typing import Any

import pytest
from deployed_backend import FINISHED, DeployedTarget
from stepwell.aws.lambda_versions import LambdaFunctionVersions
from stepwell.client import StepwellClient
from stepwell.core.versions import prune_versions
from stepwell.testing.deployed_fixtures import DeployedStack

from deploy.versioned import VERSIONED_MODULE, VERSIONED_SOURCES

WAIT_SECONDS = 300.0


def _live_version(stack: DeployedStack) -> str:
    config = stack.client_config
    alias = stack.backend.client("lambda").get_alias(
        FunctionName=config["worker_function_name"], Name=config.get("worker_alias", "live")
    )
    return str(alias["FunctionVersion"])


def _run_to_end(target: DeployedTarget, execution_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Process the queue, skipping the virtual clock to each execution's wake-up, until all have ended."""
    deadline = time.monotonic() + WAIT_SECONDS
    ended: dict[str, dict[str, Any]] = {}
    while True:
        target.process_queue()
        for execution_id in execution_ids:
            if execution_id not in ended:
                description = target.client.describe_execution(execution_id)
                if description["Status"] in FINISHED:
                    ended[execution_id] = description
        running = [execution_id for execution_id in execution_ids if execution_id not in ended]
        if not running:
            return ended
        assert time.monotonic() < deadline, f"never finished: {running}"
        if not any([target.wake_when_due(execution_id) for execution_id in running]):
            time.sleep(0.2)


def _result(description: dict[str, Any]) -> Any:
    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    return json.loads(description["Result"])


def _events(client: StepwellClient, execution_id: str, event_type: str) -> list[dict[str, Any]]:
    return [event for event in client.get_execution_history(execution_id) if event["EventType"] == event_type]


def _run_unversioned(stack: DeployedStack, target: DeployedTarget, runtime: Any) -> None:
    """Hand the work queue's messages to the worker's $LATEST, as a release before code versions did (its
    mapping invoked the unqualified function): that worker neither pins nor names a version in the log."""
    queue_url = stack.client_config["work_queue_url"]
    function_name = stack.client_config["worker_function_name"]
    for _ in range(20):
        messages = target.sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, AttributeNames=["All"], WaitTimeSeconds=0
        ).get("Messages", [])
        if not messages:
            return
        records = [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": message.get("Attributes", {}),
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            }
            for message in messages
        ]
        answer = runtime.invoke(function_name, {"Records": records}, qualifier="$LATEST")
        assert answer.succeeded and answer.executed_version == "$LATEST", answer
        failed = {item["itemIdentifier"] for item in (answer.payload or {}).get("batchItemFailures", [])}
        assert not failed, answer.payload
        for message in messages:
            target.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    raise AssertionError("the work queue never emptied")


# On moto only: the harness hands the queue's messages to the worker's $LATEST, as a release before code
# versions did; LocalStack's own mapping polls the queue there.
@pytest.mark.moto
def test_executions_from_before_code_versions_finish_on_their_code_after_a_two_step_upgrade(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    """docs/engine.md, Upgrading from a release before code versions. The session's stack is the first
    apply of the release with versions (version 1 holds `stepwell_versioned` v1); executions that ran on
    the unversioned worker ($LATEST, the same code) are what a release before versions leaves waiting. The
    reconciler pins them to version 1; the second apply deploys v2; they finish on v1, new ones on v2.
    Without the reconciler's pin version 2 replays them and fails them (NonDeterministicExecutionError).
    It applies v1 again at the end, so the session's stack is as the next test expects."""
    assert deployed_target.harness_polls, "the harness must poll the queue to hand messages to $LATEST"
    client = deployed_client
    run = uuid.uuid4().hex[:10]
    config = deployed_stack.client_config
    workflows = deployed_stack.terraform.working_dir / "workflows"
    functions = LambdaFunctionVersions(
        deployed_stack.backend.client("lambda"), config["worker_function_name"]
    )
    if (workflows / VERSIONED_MODULE).read_bytes() != VERSIONED_SOURCES["v1"].read_bytes():
        pytest.skip("the stack's $LATEST does not hold stepwell_versioned v1")
    if "1" not in {entry.version for entry in functions.list_versions()}:
        pytest.skip("the stack's version 1 is gone: it is what holds the code from before versions")

    old_orders = [
        client.start_execution("versioned.order", {"quantity": quantity}, f"pre-{run}-{quantity}")
        for quantity in (1, 2)
    ]
    old_stable = client.start_execution("versioned.stable", {"name": "cy"}, f"pre-stable-{run}")
    started_before = [*old_orders, old_stable]
    _run_unversioned(deployed_stack, deployed_target, deployed_target.runtime)
    for execution_id in started_before:
        description = client.describe_execution(execution_id)
        assert description["Status"] == "RUNNING", json.dumps(description, default=str)
        assert description.get("Version") is None, description

    # The reconcile schedule's message, as the live version gets it.
    reconciled = deployed_target.runtime.invoke(
        config["worker_function_name"], {"kind": "reconcile"}, qualifier=config.get("worker_alias", "live")
    )
    assert reconciled.succeeded, reconciled
    assert [client.describe_execution(each).get("Version") for each in started_before] == ["1"] * 3

    try:
        shutil.copyfile(VERSIONED_SOURCES["v2"], workflows / VERSIONED_MODULE)
        deployed_stack.outputs = deployed_stack.terraform.apply()
        v2 = _live_version(deployed_stack)
        assert int(v2) > 1, v2
        new_order = client.start_execution("versioned.order", {"quantity": 2}, f"post-{run}")
        ended = _run_to_end(deployed_target, [*started_before, new_order])

        for execution_id, quantity in zip(old_orders, (1, 2), strict=True):
            assert _result(ended[execution_id]) == {"code": "v1", "total": quantity * 100}
            assert ended[execution_id]["Version"] == "1"
        assert _result(ended[old_stable]) == {"code": "v1", "greeting": "hello cy"}
        assert _result(ended[new_order]) == {"code": "v2", "total": 240}
        assert ended[new_order]["Version"] == v2
        assert not any(_events(client, each, "ExecutionUpgraded") for each in started_before)
    finally:
        shutil.copyfile(VERSIONED_SOURCES["v1"], workflows / VERSIONED_MODULE)
        deployed_stack.outputs = deployed_stack.terraform.apply()


def test_a_deploy_keeps_waiting_executions_on_the_code_they_started_on(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    client = deployed_client
    run = uuid.uuid4().hex[:10]
    v1 = _live_version(deployed_stack)

    old_orders = [
        client.start_execution("versioned.order", {"quantity": quantity}, f"old-{run}-{quantity}")
        for quantity in (1, 2)
    ]
    stays = client.start_execution("versioned.stable", {"name": "ana"}, f"stays-{run}")
    moves = client.start_execution("versioned.stable", {"name": "bo"}, f"moves-{run}")
    forced = client.start_execution("versioned.order", {"quantity": 3}, f"forced-{run}")
    started_on_v1 = [*old_orders, stays, moves, forced]
    deployed_target.process_queue()
    for execution_id in started_on_v1:
        description = client.describe_execution(execution_id)
        assert description["Status"] == "RUNNING", json.dumps(description, default=str)
        assert description["Version"] == v1

    # The deploy: v2 of the module, applied by Terraform as a user would.
    workflows = deployed_stack.terraform.working_dir / "workflows"
    shutil.copyfile(VERSIONED_SOURCES["v2"], workflows / VERSIONED_MODULE)
    deployed_stack.outputs = deployed_stack.terraform.apply()
    v2 = _live_version(deployed_stack)
    assert int(v2) > int(v1), (v1, v2)
    listed = {entry["version"]: entry for entry in client.list_versions()}
    assert {v1, v2} <= set(listed), listed
    assert listed[v1]["running"] >= len(started_on_v1)
    assert "live" in listed[v2]["aliases"]

    new_order = client.start_execution("versioned.order", {"quantity": 2}, f"new-{run}")
    deployed_target.process_queue()
    assert client.describe_execution(new_order)["Version"] == v2

    # Operators move executions on purpose: one whose log fits v2, and one whose log does not.
    assert client.upgrade_execution(moves, v2) is True
    assert client.upgrade_execution(forced, "live") is True
    assert client.upgrade_execution(moves, v2) is False  # already there

    ended = _run_to_end(deployed_target, [*started_on_v1, new_order])

    for execution_id, quantity in zip(old_orders, (1, 2), strict=True):
        assert _result(ended[execution_id]) == {"code": "v1", "total": quantity * 100}
        assert ended[execution_id]["Version"] == v1
    assert _result(ended[stays]) == {"code": "v1", "greeting": "hello ana"}
    assert _result(ended[new_order]) == {"code": "v2", "total": 240}
    assert ended[new_order]["Version"] == v2

    assert _result(ended[moves]) == {"code": "v2", "greeting": "hello bo"}
    assert ended[moves]["Version"] == v2
    upgraded = _events(client, moves, "ExecutionUpgraded")
    assert [event["ExecutionUpgradedDetails"] for event in upgraded] == [{"FromVersion": v1, "ToVersion": v2}]

    failed = ended[forced]
    assert failed["Status"] == "FAILED", json.dumps(failed, default=str)
    assert failed["Error"]["ErrorType"].endswith("NonDeterministicExecutionError"), failed["Error"]
    message = failed["Error"]["ErrorMessage"]
    assert "price" in message and "subtotal" in message, message
    history_failure = _events(client, forced, "ExecutionFailed")
    assert history_failure and "subtotal" in json.dumps(history_failure, default=str)

    # v1 is no longer live: the reconciler's policy deletes it once nothing running is pinned to it
    # (earlier tests of the session may have left executions waiting on it), and keeps the live one.
    store = client.engine.store
    still_pinned = store.count_pinned(v1)
    assert {entry["version"]: entry["running"] for entry in client.list_versions()}[v1] == still_pinned
    config = deployed_stack.client_config
    functions = LambdaFunctionVersions(
        deployed_stack.backend.client("lambda"), config["worker_function_name"]
    )
    deleted = prune_versions(store, functions, keep=1)
    remaining = {entry.version for entry in functions.list_versions()}
    assert v2 not in deleted and v2 in remaining
    assert (v1 in deleted) == (still_pinned == 0) == (v1 not in remaining), (deleted, still_pinned, remaining)
