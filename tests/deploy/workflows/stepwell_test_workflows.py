"""Workflows the deployed failure tests run (copied into the stack's workflows_dir by tests/deploy).

Markers are items `test-marker#<run>#...` in the stack's coordination table (no due index attributes,
so the engine never looks at them), so a test can see which step bodies ran and how often, make a step
crash its process once, or hold a step until the test lets it go.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3
from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration
from botocore.exceptions import ClientError
from stepwell.core.flow_limits import Rate
from stepwell.core.registry import workflow
from stepwell.features.callback_urls import callback_url

MARKER_PREFIX = "test-marker#"
HOLD_LIMIT_SECONDS = 120.0
MARKER_TTL_SECONDS = 86400


def _table() -> str:
    return os.environ["STEPWELL_COORDINATION_TABLE"]


def _dynamodb() -> Any:
    return boto3.client("dynamodb")


def _exists(name: str) -> bool:
    found = _dynamodb().get_item(TableName=_table(), Key={"key": {"S": MARKER_PREFIX + name}})
    return "Item" in found


def _create_once(name: str) -> bool:
    """Create the marker; False if it already existed."""
    try:
        _dynamodb().put_item(
            TableName=_table(),
            Item={
                "key": {"S": MARKER_PREFIX + name},
                "ttl": {"N": str(int(time.time()) + MARKER_TTL_SECONDS)},
            },
            ConditionExpression="attribute_not_exists(#k)",
            ExpressionAttributeNames={"#k": "key"},
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True


def _ran(run: str, step: str) -> None:
    """Count a run of a step body (the test reads `test-marker#<run>#ran#<step>`'s `n`)."""
    _dynamodb().update_item(
        TableName=_table(),
        Key={"key": {"S": f"{MARKER_PREFIX}{run}#ran#{step}"}},
        UpdateExpression="ADD n :one SET #t = :ttl",
        ExpressionAttributeNames={"#t": "ttl"},
        ExpressionAttributeValues={
            ":one": {"N": "1"},
            ":ttl": {"N": str(int(time.time()) + MARKER_TTL_SECONDS)},
        },
    )


@workflow("failures.sequence")
@durable_execution
def sequence(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    """A step, a wait, a callback and a step: one message of each kind the engine sends."""
    run = event["run"]

    def first(_: StepContext) -> str:
        _ran(run, "first")
        return f"first-{run}"

    one = context.step(first, name="first")
    context.wait(Duration.from_seconds(2))
    callback = context.create_callback(name="approval")
    approval = callback.result()

    def second(_: StepContext) -> str:
        _ran(run, "second")
        return f"second-{run}"

    two = context.step(second, name="second")
    return {"first": one, "approval": approval, "second": two}


@workflow("failures.crash_once")
@durable_execution
def crash_once(event: dict[str, Any], context: DurableContext) -> list[str]:
    """Three steps; the third kills its process the first time it runs (after two checkpoints)."""
    run = event["run"]
    results: list[str] = []
    for name in ("alpha", "beta"):

        def body(_: StepContext, name: str = name) -> str:
            _ran(run, name)
            return f"{name}-{run}"

        results.append(context.step(body, name=name))

    def crashing(_: StepContext) -> str:
        _ran(run, "gamma")
        if _create_once(f"{run}#crashed"):
            os._exit(1)  # the process dies mid-invocation, as a Lambda sandbox that crashes
        return f"gamma-{run}"

    results.append(context.step(crashing, name="gamma"))
    return results


@workflow("failures.hold")
@durable_execution
def hold(event: dict[str, Any], context: DurableContext) -> str:
    """One step that signals it is running, then holds until the test writes the release marker."""
    run = event["run"]

    def held(_: StepContext) -> str:
        _ran(run, "held")
        deadline = time.monotonic() + HOLD_LIMIT_SECONDS
        while not _exists(f"{run}#release"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run} was never released")
            time.sleep(0.1)
        return f"held-{run}"

    return context.step(held, name="held")


@workflow("payloads.long_wait")
@durable_execution
def long_wait(event: dict[str, Any], context: DurableContext) -> dict[str, int]:
    """An offloaded input, step result and callback result, around two waits of `days` (longer than the
    stack's retention): tests/deploy/test_payload_retention_deployed.py."""
    size = len(event["blob"])

    def big_result(_: StepContext) -> str:
        return "r" * size

    result = context.step(big_result, name="big-result")
    context.wait(Duration.from_days(int(event["days"])))
    approval = context.create_callback(name="approval").result()
    context.wait(Duration.from_days(int(event["days"])))
    return {"input": size, "result": len(result), "callback": len(approval or "")}


@workflow("invoke.lambda_target")
@durable_execution
def invoke_lambda_target(event: dict[str, Any], context: DurableContext) -> Any:
    """`context.invoke` of the Lambda function `event["target"]` (a name or ARN, as given) on
    `event["input"]`; its result is the execution's, its error the execution's failure:
    tests/deploy/test_invoke_deployed.py."""
    return context.invoke(event["target"], event["input"], name="call-target")


@workflow("callbacks.by_url")
@durable_execution
def callback_by_url(event: dict[str, Any], context: DurableContext) -> Any:
    """A callback a third party completes over HTTP: the step "urls" records its callback URLs (a JSON
    object of success, failure and heartbeat, as text) for the test to POST to; the callback's result
    (JSON text) parsed is the execution's, its failure the execution's:
    tests/deploy/test_callback_urls_deployed.py."""
    callback = context.create_callback(name="by-url")

    def urls(_: StepContext) -> str:
        outcomes = ("success", "failure", "heartbeat")
        return json.dumps({outcome: callback_url(callback.callback_id, outcome) for outcome in outcomes})

    context.step(urls, name="urls")
    raw = callback.result()
    return None if raw is None else json.loads(raw)


@workflow("callbacks.deadline")
@durable_execution
def callback_deadline(event: dict[str, Any], context: DurableContext) -> Any:
    """An approval with a one-day deadline (a schedule, being more than 900 s ahead); its result is the
    execution's: tests/deploy/test_wake_ups_deployed.py."""
    callback = context.create_callback(name="approval", config=CallbackConfig(timeout=Duration.from_days(1)))
    return callback.result()


@workflow("flow.rated", rate=Rate(2, period=60, key="$.customer"))
@durable_execution
def rated(event: dict[str, Any], context: DurableContext) -> int:
    """At most two starts a minute per customer: tests/deploy/test_flow_control_deployed.py."""
    return int(context.step(lambda _: int(event["n"]), name="count"))
