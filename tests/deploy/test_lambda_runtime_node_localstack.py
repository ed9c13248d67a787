"""LocalStack's stepwell-local executor (plugins/localstack) runs Node.js functions as the moto stack's
runtime does (issue 41), on the same bootstrap (node_bootstrap.mjs): Lambda's handler resolution, context,
error shapes and timeout; Event invokes whose answers LocalStack sends to on-success and on-failure
destinations; the harness's variables over a function's environment (set_function_environment); and a
durable handler of @aws/durable-execution-sdk-js reaching the checkpoint endpoint its AWS_ENDPOINT_URL_LAMBDA
names. The same cases on moto are in test_lambda_runtime_node.py, whose sources and helpers this reuses."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from stepwell.testing.backends import Backend
from stepwell.testing.localstack import set_function_environment

from tests.deploy.test_lambda_runtime_node import (
    COMMONJS_SOURCE,
    ESM_SOURCE,
    CheckpointRecorder,
    _durable_package,
    _zip,
)

pytestmark = [
    pytest.mark.localstack,
    pytest.mark.skipif(shutil.which("node") is None, reason="no node on PATH (make node installs it)"),
]


class LocalStackNodeFunctions:
    """Node.js functions on LocalStack, each with its own name; queues for destination records."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.suffix = uuid.uuid4().hex[:8]
        self.lam, self.sqs = backend.client("lambda"), backend.client("sqs")
        trust = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "lambda.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
        self.role = backend.client("iam").create_role(
            RoleName=f"node-role-{self.suffix}", AssumeRolePolicyDocument=json.dumps(trust)
        )["Role"]["Arn"]
        self.names: list[str] = []
        self.overridden: list[str] = []  # functions given harness variables (set_function_environment)

    def create(self, name: str, code: bytes, handler: str, *, timeout: int = 30, **extra: Any) -> str:
        function_name = f"{name}-{self.suffix}"
        self.lam.create_function(
            FunctionName=function_name,
            Runtime=extra.pop("Runtime", "nodejs20.x"),
            Role=self.role,
            Handler=handler,
            Code={"ZipFile": code},
            Timeout=timeout,
            MemorySize=256,
            **extra,
        )
        self.lam.get_waiter("function_active_v2").wait(FunctionName=function_name)
        self.names.append(function_name)
        return function_name

    def invoke(self, name: str, event: Any, **extra: Any) -> tuple[dict[str, Any], Any]:
        answer = self.lam.invoke(FunctionName=name, Payload=json.dumps(event).encode(), **extra)
        raw = answer["Payload"].read()
        return answer, json.loads(raw) if raw else None

    def queue(self) -> tuple[str, str]:
        url = self.sqs.create_queue(QueueName=f"records-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        return url, str(arn)

    def records(self, url: str, expected: int, attempts: int = 60) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for _ in range(attempts):
            if len(found) >= expected:
                break
            answer = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
            for message in answer.get("Messages", []):
                found.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return found

    def set_environment(self, name: str, variables: dict[str, str]) -> None:
        set_function_environment(self.backend.endpoint_url, name, variables)
        self.overridden.append(name)

    def delete_all(self) -> None:
        for name in self.overridden:
            set_function_environment(self.backend.endpoint_url, name, None)
        for name in self.names:
            self.lam.delete_function(FunctionName=name)


@pytest.fixture()
def functions(stepwell_backend: Backend) -> Iterator[LocalStackNodeFunctions]:
    created = LocalStackNodeFunctions(stepwell_backend)
    try:
        yield created
    finally:
        created.delete_all()


def test_node_handlers_resolve_and_run_with_lambdas_context_and_environment(
    functions: LocalStackNodeFunctions, stepwell_backend: Backend
) -> None:
    name = functions.create(
        "cjs",
        _zip({"src/app.js": COMMONJS_SOURCE}),
        "src/app.handler",
        Environment={"Variables": {"GREETING": "hello"}},
    )
    esm = functions.create(
        "mjs",
        _zip({"esm/index.mjs": ESM_SOURCE, "esm/helper.mjs": "export const helper = (n) => n * 2;\n"}),
        "esm/index.handler",
        Runtime="nodejs22.x",
    )
    answer, first = functions.invoke(name, {"n": 1})
    _, second = functions.invoke(name, {"n": 2})
    _, by_esm = functions.invoke(esm, {"n": 4})
    assert "FunctionError" not in answer, first
    assert first["echo"] == {"n": 1}
    assert first["greeting"] == "hello"
    assert first["region"] == stepwell_backend.region
    assert first["executionEnv"] == "AWS_Lambda_nodejs20.x"
    context = first["context"]
    assert context["awsRequestId"] == answer["ResponseMetadata"]["RequestId"]
    assert context["functionName"] == name
    assert context["functionVersion"] == "$LATEST"
    assert context["invokedFunctionArn"].endswith(f":function:{name}")
    assert context["memoryLimitInMB"] == "256"
    assert 0 < context["remaining"] <= 30_000
    assert second["pid"] == first["pid"]  # one warm environment served both
    assert by_esm == {"module": "esm", "doubled": 8}


def test_errors_and_the_timeout_are_reported_as_lambdas_nodejs_runtime_reports_them(
    functions: LocalStackNodeFunctions,
) -> None:
    name = functions.create("errors", _zip({"app.js": COMMONJS_SOURCE}), "app.handler", timeout=2)
    missing = functions.create("noexport", _zip({"app.js": COMMONJS_SOURCE}), "app.missing")
    answer, thrown = functions.invoke(name, {"raise": "no stock"})
    _, before_crash = functions.invoke(name, {"n": 1})
    _, crashed = functions.invoke(name, {"crash": "out of range"})
    _, after_crash = functions.invoke(name, {"n": 2})
    timed_out_answer, timed_out = functions.invoke(name, {"sleep": 30})
    _, after_timeout = functions.invoke(name, {"n": 3})
    _, not_exported = functions.invoke(missing, {})
    assert answer["FunctionError"] == "Unhandled"
    assert (thrown["errorType"], thrown["errorMessage"]) == ("OrderRejected", "no stock")
    assert thrown["trace"][0] == "OrderRejected: no stock"
    assert (crashed["errorType"], crashed["errorMessage"]) == ("RangeError", "out of range")
    assert after_crash["pid"] != before_crash["pid"]  # the uncaught error ended its environment
    assert timed_out_answer["FunctionError"] == "Unhandled"
    assert timed_out["errorType"] == "Sandbox.Timedout"
    assert "Task timed out after 2.00 seconds" in timed_out["errorMessage"]
    assert after_timeout["pid"] != after_crash["pid"]  # a new environment replaced the timed-out one
    assert not_exported["errorType"] == "Runtime.HandlerNotFound"
    assert not_exported["errorMessage"] == "app.missing is undefined or not exported"


def test_event_invokes_send_their_answers_to_the_destinations(functions: LocalStackNodeFunctions) -> None:
    name = functions.create("events", _zip({"app.js": COMMONJS_SOURCE}), "app.handler")
    success_url, success_arn = functions.queue()
    failure_url, failure_arn = functions.queue()
    functions.lam.put_function_event_invoke_config(
        FunctionName=name,
        MaximumRetryAttempts=0,
        DestinationConfig={
            "OnSuccess": {"Destination": success_arn},
            "OnFailure": {"Destination": failure_arn},
        },
    )
    succeeded, _ = functions.invoke(name, {"n": 7}, InvocationType="Event")
    failed, _ = functions.invoke(name, {"raise": "down"}, InvocationType="Event")
    assert (succeeded["StatusCode"], failed["StatusCode"]) == (202, 202)
    [success] = functions.records(success_url, 1)
    [failure] = functions.records(failure_url, 1)
    assert success["requestContext"]["condition"] == "Success"
    assert success["requestContext"]["requestId"] == succeeded["ResponseMetadata"]["RequestId"]
    assert success["requestContext"]["approximateInvokeCount"] == 1
    assert success["requestPayload"] == {"n": 7}
    assert success["responseContext"]["statusCode"] == 200
    assert success["responsePayload"]["echo"] == {"n": 7}
    assert failure["requestContext"]["condition"] == "RetriesExhausted"
    assert failure["requestContext"]["requestId"] == failed["ResponseMetadata"]["RequestId"]
    assert failure["requestPayload"] == {"raise": "down"}
    assert failure["responseContext"]["functionError"] == "Unhandled"
    error = failure["responsePayload"]
    assert (error["errorType"], error["errorMessage"]) == ("OrderRejected", "down")


def test_a_durable_js_handler_checkpoints_at_the_endpoint_the_harness_gives_it(
    functions: LocalStackNodeFunctions,
) -> None:
    name = functions.create("durable", _durable_package(), "index.handler")
    recorder = CheckpointRecorder()
    # The function's own AWS_ENDPOINT_URL_LAMBDA would be a function URL no DNS resolves here.
    functions.set_environment(name, {"AWS_ENDPOINT_URL_LAMBDA": recorder.url})
    function_arn = functions.lam.get_function(FunctionName=name)["Configuration"]["FunctionArn"]
    arn = f"{function_arn}:$LATEST/durable-execution/run-1/inv-1"
    event = {
        "DurableExecutionArn": arn,
        "CheckpointToken": "token-1",
        "InitialExecutionState": {
            "Operations": [
                {
                    "Id": "execution",
                    "Type": "EXECUTION",
                    "Status": "STARTED",
                    "StartTimestamp": 1_700_000_000,
                    "ExecutionDetails": {"InputPayload": json.dumps({"a": 40, "b": 2})},
                }
            ],
            "NextMarker": "",
        },
    }
    try:
        answer, output = functions.invoke(name, event)
    finally:
        recorder.close()
    assert "FunctionError" not in answer, output
    assert output == {"Status": "SUCCEEDED", "Result": json.dumps({"total": 42}, separators=(",", ":"))}
    [request] = recorder.requests
    assert request["headers"]["authorization"].startswith("AWS4-HMAC-SHA256 ")
    assert request["body"]["CheckpointToken"] == "token-1"
    assert [(update["Type"], update["Action"]) for update in request["body"]["Updates"]] == [
        ("STEP", "START"),
        ("STEP", "SUCCEED"),
    ]
