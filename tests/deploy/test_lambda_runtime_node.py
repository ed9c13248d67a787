"""The local Lambda runtime on moto runs Node.js functions (issue 41): Lambda's handler resolution
(CommonJS, ES modules, nested paths), context, error shapes, timeout and environment; Event invokes
with on-success and on-failure destinations; and a durable handler of @aws/durable-execution-sdk-js,
bundled with its node_modules (tools/node, `make node`), reaching the checkpoint endpoint its
AWS_ENDPOINT_URL_LAMBDA names with a CheckpointDurableExecution request of Lambda's wire shape."""

from __future__ import annotations

import io
import json
import os
import shutil
import threading
import uuid
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import boto3
import botocore.session
import pytest
from botocore.exceptions import ClientError
from stepwell.testing.backends import Backend, start_backend
from stepwell.testing.lambda_runtime import FunctionSpec, LambdaRuntime
from stepwell.testing.lambda_runtime.node_packages import package_files

NODE_PACKAGES = Path(__file__).resolve().parents[2] / "tools" / "node" / "node_modules"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None, reason="no node on PATH (make node installs it)"
)

COMMONJS_SOURCE = """
const os = require("node:os");
exports.handler = async (event, context) => {
  if (event.sleep) await new Promise((resolve) => setTimeout(resolve, event.sleep * 1000));
  if (event.raise) {
    class OrderRejected extends Error {}
    const error = new OrderRejected(event.raise);
    error.name = "OrderRejected";
    throw error;
  }
  if (event.reject) return Promise.reject("plain " + event.reject);
  if (event.crash) {
    setTimeout(() => {
      throw new RangeError(event.crash);
    }, 0);
    return new Promise(() => {}); // never settles: the uncaught error ends the invocation
  }
  console.log("handled", JSON.stringify(event));
  return {
    echo: event,
    greeting: process.env.GREETING,
    endpoint: process.env.AWS_ENDPOINT_URL,
    lambdaEndpoint: process.env.AWS_ENDPOINT_URL_LAMBDA,
    accessKey: process.env.AWS_ACCESS_KEY_ID,
    region: process.env.AWS_REGION,
    executionEnv: process.env.AWS_EXECUTION_ENV,
    context: {
      awsRequestId: context.awsRequestId,
      functionName: context.functionName,
      functionVersion: context.functionVersion,
      invokedFunctionArn: context.invokedFunctionArn,
      memoryLimitInMB: context.memoryLimitInMB,
      logGroupName: context.logGroupName,
      remaining: context.getRemainingTimeInMillis(),
    },
    pid: process.pid,
  };
};
exports.nested = { callbacks: {
  handler: (event, context, callback) => {
    const answer = () =>
      event.fail ? callback(new TypeError(event.fail)) : callback(null, { called: event.n });
    setTimeout(answer, 10);
  },
} };
"""

ESM_SOURCE = """
import { helper } from "./helper.mjs";
export const handler = async (event) => ({ module: "esm", doubled: helper(event.n) });
"""


def _zip(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def moto_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    with start_backend("moto", log_dir=str(tmp_path_factory.mktemp("moto-node"))) as backend:
        yield backend


class NodeFunctions:
    """Node.js functions on moto, each with its own name; a queue for destination records."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.suffix = uuid.uuid4().hex[:8]
        self.lam, self.sqs = backend.client("lambda"), backend.client("sqs")
        self.role = backend.client("iam").create_role(
            RoleName=f"node-role-{self.suffix}", AssumeRolePolicyDocument="{}"
        )["Role"]["Arn"]

    def create(
        self, name: str, files: dict[str, str | bytes], handler: str, *, timeout: int = 30, **extra: Any
    ) -> str:
        function_name = f"{name}-{self.suffix}"
        self.lam.create_function(
            FunctionName=function_name,
            Runtime=extra.pop("Runtime", "nodejs20.x"),
            Role=self.role,
            Handler=handler,
            Code={"ZipFile": _zip(files)},
            Timeout=timeout,
            MemorySize=256,
            **extra,
        )
        return function_name

    def queue(self) -> tuple[str, str]:
        url = self.sqs.create_queue(QueueName=f"records-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        return url, str(arn)

    def records(self, url: str, expected: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for _ in range(30):
            if len(found) >= expected:
                break
            answer = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
            for message in answer.get("Messages", []):
                found.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return found


@pytest.fixture()
def functions(moto_backend: Backend) -> NodeFunctions:
    return NodeFunctions(moto_backend)


def _runtime(backend: Backend, work_dir: Path, **options: Any) -> LambdaRuntime:
    return LambdaRuntime(
        backend.client, backend.lambda_code, backend.environment(), work_dir, region=backend.region, **options
    )


def _lambda_api(runtime: LambdaRuntime, backend: Backend) -> Any:
    return boto3.client(
        "lambda", endpoint_url=runtime.lambda_endpoint_url, region_name=backend.region, **backend.credentials
    )


def test_a_commonjs_handler_in_a_folder_runs_with_lambdas_context_and_environment(
    functions: NodeFunctions, moto_backend: Backend, tmp_path: Path
) -> None:
    name = functions.create(
        "cjs",
        {"src/app.js": COMMONJS_SOURCE},
        "src/app.handler",
        Environment={"Variables": {"GREETING": "hello"}},
    )
    with _runtime(moto_backend, tmp_path) as runtime:
        lambda_endpoint = runtime.lambda_endpoint_url
        lambda_api = _lambda_api(runtime, moto_backend)
        answer = lambda_api.invoke(FunctionName=name, Payload=b'{"n": 1}')
        first = json.loads(answer["Payload"].read())
        second = runtime.invoke(name, {"n": 2})
        log = runtime.log_path(name).read_text()
    assert "FunctionError" not in answer
    assert answer["ExecutedVersion"] == "$LATEST"
    assert first["echo"] == {"n": 1}
    assert first["greeting"] == "hello"
    assert first["endpoint"] == moto_backend.endpoint_url
    assert first["lambdaEndpoint"] == lambda_endpoint
    assert first["accessKey"] == moto_backend.credentials["aws_access_key_id"]
    assert first["region"] == moto_backend.region
    assert first["executionEnv"] == "AWS_Lambda_nodejs20.x"
    context = first["context"]
    assert context["awsRequestId"] == answer["ResponseMetadata"]["RequestId"]
    assert context["functionName"] == name
    assert context["functionVersion"] == "$LATEST"
    assert context["invokedFunctionArn"].endswith(f":function:{name}")
    assert context["memoryLimitInMB"] == "256"
    assert context["logGroupName"] == f"/aws/lambda/{name}"
    assert 0 < context["remaining"] <= 30_000
    assert second.succeeded and second.payload["pid"] == first["pid"]  # one warm worker served both
    # console.log lines are the function's log, as Lambda writes them: time, request id, level, message.
    [line] = [line for line in log.splitlines() if line.endswith('handled {"n":1}')]
    assert line.split("\t")[1:3] == [context["awsRequestId"], "INFO"]


def test_es_modules_and_callback_handlers_resolve_as_in_lambda(
    functions: NodeFunctions, moto_backend: Backend, tmp_path: Path
) -> None:
    helper = "export const helper = (n) => n * 2;\n"
    mjs = functions.create(
        "mjs", {"esm/index.mjs": ESM_SOURCE, "esm/helper.mjs": helper}, "esm/index.handler"
    )
    typed = functions.create(
        "typed",
        {"index.js": ESM_SOURCE, "helper.mjs": helper, "package.json": '{"type": "module"}'},
        "index.handler",
    )
    callbacks = functions.create("cb", {"src/app.js": COMMONJS_SOURCE}, "src/app.nested.callbacks.handler")
    folder = functions.create("folder", {"lib/index.js": "exports.run = async () => 'folder';\n"}, "lib.run")
    with _runtime(moto_backend, tmp_path) as runtime:
        by_mjs = runtime.invoke(mjs, {"n": 4})
        by_type = runtime.invoke(typed, {"n": 5})
        called = runtime.invoke(callbacks, {"n": 6})
        by_folder = runtime.invoke(folder, {})
        failed = runtime.invoke(callbacks, {"fail": "bad callback"})
    assert by_mjs.payload == {"module": "esm", "doubled": 8}, by_mjs.error
    assert by_type.payload == {"module": "esm", "doubled": 10}, by_type.error
    assert called.payload == {"called": 6}, called.error
    assert by_folder.payload == "folder", by_folder.error
    assert failed.error is not None
    assert (failed.error["errorType"], failed.error["errorMessage"]) == ("TypeError", "bad callback")


def test_errors_are_reported_as_lambdas_nodejs_runtime_reports_them(
    functions: NodeFunctions, moto_backend: Backend, tmp_path: Path
) -> None:
    name = functions.create("errors", {"app.js": COMMONJS_SOURCE}, "app.handler")
    no_export = functions.create("noexport", {"app.js": COMMONJS_SOURCE}, "app.missing")
    no_module = functions.create("nomodule", {"app.js": COMMONJS_SOURCE}, "absent.handler")
    with _runtime(moto_backend, tmp_path) as runtime:
        answer = _lambda_api(runtime, moto_backend).invoke(
            FunctionName=name, Payload=b'{"raise": "no stock"}'
        )
        thrown = json.loads(answer["Payload"].read())
        rejected = runtime.invoke(name, {"reject": "reason"})
        before_crash = runtime.invoke(name, {"n": 1})
        crashed = runtime.invoke(name, {"crash": "out of range"})
        after_crash = runtime.invoke(name, {"n": 2})
        missing_export = runtime.invoke(no_export, {})
        missing_module = runtime.invoke(no_module, {})
    assert answer["FunctionError"] == "Unhandled"
    assert (thrown["errorType"], thrown["errorMessage"]) == ("OrderRejected", "no stock")
    assert thrown["trace"][0] == "OrderRejected: no stock"
    assert any("app.js" in frame for frame in thrown["trace"][1:])
    assert rejected.error == {"errorType": "string", "errorMessage": "plain reason", "trace": []}
    assert crashed.error is not None
    assert (crashed.error["errorType"], crashed.error["errorMessage"]) == ("RangeError", "out of range")
    assert after_crash.payload["pid"] != before_crash.payload["pid"]  # the crash ended its environment
    assert missing_export.error is not None and missing_module.error is not None
    assert missing_export.error["errorType"] == "Runtime.HandlerNotFound"
    assert missing_export.error["errorMessage"] == "app.missing is undefined or not exported"
    assert missing_module.error["errorType"] == "Runtime.ImportModuleError"
    assert "absent" in missing_module.error["errorMessage"]


def test_the_timeout_ends_the_invocation_and_its_environment(
    functions: NodeFunctions, moto_backend: Backend, tmp_path: Path
) -> None:
    name = functions.create("slow", {"app.js": COMMONJS_SOURCE}, "app.handler", timeout=1)
    with _runtime(moto_backend, tmp_path) as runtime:
        before = runtime.invoke(name, {"n": 1})
        slow = runtime.invoke(name, {"sleep": 30})
        after = runtime.invoke(name, {"n": 2})
    assert slow.error is not None
    assert slow.error["errorType"] == "Sandbox.Timedout"
    assert "Task timed out after 1.00 seconds" in slow.error["errorMessage"]
    assert before.succeeded and after.succeeded
    assert after.payload["pid"] != before.payload["pid"]  # a new environment replaced the ended one


def test_an_unsupported_runtime_is_refused_by_name(
    functions: NodeFunctions, moto_backend: Backend, tmp_path: Path
) -> None:
    name = functions.create("java", {"app.js": COMMONJS_SOURCE}, "app.handler", Runtime="java21")
    with _runtime(moto_backend, tmp_path) as runtime:
        result = runtime.invoke(name, {})
    assert result.error is not None
    assert result.error["errorType"] == "InvalidRuntimeException"
    assert "java21" in result.error["errorMessage"] and "nodejs20.x" in result.error["errorMessage"]


# ---------------------------------------------------------------------------------------------------
# Event invokes: 202 at once, then Lambda's destination records on the queues the event invoke config names.


def test_an_event_invoke_sends_its_answer_to_the_on_success_destination(
    functions: NodeFunctions, moto_backend: Backend, tmp_path: Path
) -> None:
    name = functions.create("success", {"app.js": COMMONJS_SOURCE}, "app.handler")
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
    with _runtime(moto_backend, tmp_path) as runtime:
        answer = _lambda_api(runtime, moto_backend).invoke(
            FunctionName=name, InvocationType="Event", Payload=b'{"n": 7}'
        )
        assert answer["StatusCode"] == 202
        assert runtime.drain(timeout_seconds=60).settled
        assert runtime.background_errors == []
    [record] = functions.records(success_url, 1)
    function_arn = functions.lam.get_function(FunctionName=name)["Configuration"]["FunctionArn"]
    request_id = answer["ResponseMetadata"]["RequestId"]
    assert record["version"] == "1.0"
    assert record["timestamp"].endswith("Z")
    assert record["requestContext"] == {
        "requestId": request_id,
        "functionArn": f"{function_arn}:$LATEST",
        "condition": "Success",
        "approximateInvokeCount": 1,
    }
    assert record["requestPayload"] == {"n": 7}
    assert record["responseContext"] == {"statusCode": 200, "executedVersion": "$LATEST"}
    assert record["responsePayload"]["echo"] == {"n": 7}
    assert record["responsePayload"]["context"]["awsRequestId"] == request_id
    assert functions.records(failure_url, 0) == []


def test_a_failed_event_goes_to_the_on_failure_destination_after_its_retries_or_its_age(
    functions: NodeFunctions, moto_backend: Backend, tmp_path: Path
) -> None:
    failure_url, failure_arn = functions.queue()
    no_retries = functions.create("noretry", {"app.js": COMMONJS_SOURCE}, "app.handler")
    functions.lam.put_function_event_invoke_config(
        FunctionName=no_retries,
        MaximumRetryAttempts=0,
        DestinationConfig={"OnFailure": {"Destination": failure_arn}},
    )
    # Two retries allowed, but Lambda's one-minute wait before the first would make the event older than 60 s.
    aged = functions.create("aged", {"app.js": COMMONJS_SOURCE}, "app.handler")
    functions.lam.put_function_event_invoke_config(
        FunctionName=aged,
        MaximumRetryAttempts=2,
        MaximumEventAgeInSeconds=60,
        DestinationConfig={"OnFailure": {"Destination": failure_arn}},
    )
    with _runtime(moto_backend, tmp_path) as runtime:
        lambda_api = _lambda_api(runtime, moto_backend)
        first = lambda_api.invoke(
            FunctionName=no_retries, InvocationType="Event", Payload=b'{"raise": "down"}'
        )
        assert runtime.drain(timeout_seconds=60).settled
        outcome = runtime.invoke_event(aged, {"raise": "still down"})
        assert runtime.background_errors == []
    assert (outcome.attempts, outcome.sent_to_destination, outcome.condition.value) == (
        1,
        True,
        "EventAgeExceeded",
    )
    records = {record["requestContext"]["condition"]: record for record in functions.records(failure_url, 2)}
    exhausted, too_old = records["RetriesExhausted"], records["EventAgeExceeded"]
    assert exhausted["requestContext"]["requestId"] == first["ResponseMetadata"]["RequestId"]
    assert exhausted["requestContext"]["approximateInvokeCount"] == 1
    assert exhausted["requestPayload"] == {"raise": "down"}
    assert exhausted["responseContext"] == {
        "statusCode": 200,
        "executedVersion": "$LATEST",
        "functionError": "Unhandled",
    }
    assert exhausted["responsePayload"]["errorType"] == "OrderRejected"
    assert exhausted["responsePayload"]["errorMessage"] == "down"
    assert too_old["requestContext"]["approximateInvokeCount"] == 1
    assert too_old["requestPayload"] == {"raise": "still down"}


def test_an_event_payload_over_lambdas_one_megabyte_quota_is_refused_and_runs_nothing(
    functions: NodeFunctions, moto_backend: Backend, tmp_path: Path
) -> None:
    name = functions.create("quota", {"app.js": COMMONJS_SOURCE}, "app.handler")
    fits = json.dumps({"pad": "x" * (1024 * 1024 - 20)}).encode()
    too_big = json.dumps({"pad": "x" * (1024 * 1024)}).encode()
    with _runtime(moto_backend, tmp_path) as runtime:
        lambda_api = _lambda_api(runtime, moto_backend)
        with pytest.raises(ClientError) as refused:
            lambda_api.invoke(FunctionName=name, InvocationType="Event", Payload=too_big)
        accepted = lambda_api.invoke(FunctionName=name, InvocationType="Event", Payload=fits)
        synchronous = lambda_api.invoke(FunctionName=name, Payload=too_big)  # under the 6 MB of a sync invoke
        assert runtime.drain(timeout_seconds=60).settled
    assert refused.value.response["Error"]["Code"] == "RequestEntityTooLargeException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 413
    assert accepted["StatusCode"] == 202
    assert "FunctionError" not in synchronous
    assert len(runtime.invocations) == 2  # the refused one never ran


# ---------------------------------------------------------------------------------------------------
# A durable handler of @aws/durable-execution-sdk-js reaches the checkpoint endpoint AWS_ENDPOINT_URL_LAMBDA
# names, with botocore's wire shape of CheckpointDurableExecution.

DURABLE_SOURCE = """
const { withDurableExecution } = require("@aws/durable-execution-sdk-js");
exports.handler = withDurableExecution(async (event, context) => {
  const total = await context.step("add", async () => event.a + event.b);
  return { total };
});
"""


class CheckpointRecorder:
    """A local HTTP endpoint that records each request and answers a checkpoint with a new token."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                recorder.requests.append(
                    {
                        "path": self.path,
                        "headers": {key.lower(): value for key, value in self.headers.items()},
                        "body": json.loads(body or b"{}"),
                    }
                )
                answer = json.dumps({"CheckpointToken": "token-2", "NewExecutionState": {"Operations": []}})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer.encode())

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _durable_package() -> bytes:
    if not (NODE_PACKAGES / ".installed").exists():
        pytest.skip(f"{NODE_PACKAGES} is not installed: run `make node`")
    # The SDK and what it needs, not the TypeScript compiler (a dev dependency of tools/node).
    files: dict[str, str | bytes] = {"index.js": DURABLE_SOURCE, **package_files(NODE_PACKAGES)}
    return _zip(files)


def _members(shape_name: str) -> set[str]:
    model = botocore.session.get_session().get_service_model("lambda")
    return set(model.shape_for(shape_name).members)


def test_a_durable_js_handler_checkpoints_at_its_aws_endpoint_url_lambda(
    functions: NodeFunctions, moto_backend: Backend, tmp_path: Path
) -> None:
    name = functions.create("durable", {"index.js": ""}, "index.handler")
    functions.lam.update_function_code(FunctionName=name, ZipFile=_durable_package())
    recorder = CheckpointRecorder()
    function_arn = f"arn:aws:lambda:{moto_backend.region}:123456789012:function:{name}"
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

    def endpoint(spec: FunctionSpec) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL_LAMBDA": recorder.url} if spec.name == name else {}

    try:
        with _runtime(moto_backend, tmp_path, function_environment=endpoint) as runtime:
            result = runtime.invoke(name, event)
    finally:
        recorder.close()
    assert result.succeeded, result.error
    assert result.payload == {
        "Status": "SUCCEEDED",
        "Result": json.dumps({"total": 42}, separators=(",", ":")),
    }
    [request] = recorder.requests
    prefix, _, quoted_arn = request["path"].rpartition("/durable-executions/")
    assert prefix == "/2025-12-01"
    assert quoted_arn.endswith("/checkpoint")
    assert unquote(quoted_arn.removesuffix("/checkpoint")) == arn
    assert request["headers"]["authorization"].startswith("AWS4-HMAC-SHA256 ")
    assert "/lambda/aws4_request" in request["headers"]["authorization"]
    body = request["body"]
    # The body's members are CheckpointDurableExecutionRequest's (the ARN travels in the path), each update's
    # OperationUpdate's, as botocore's model of the Lambda API has them.
    assert set(body) <= _members("CheckpointDurableExecutionRequest") - {"DurableExecutionArn"}
    assert body["CheckpointToken"] == "token-1"
    assert body["ClientToken"]
    assert [(update["Type"], update["Action"]) for update in body["Updates"]] == [
        ("STEP", "START"),
        ("STEP", "SUCCEED"),
    ]
    for update in body["Updates"]:
        assert set(update) <= _members("OperationUpdate")
    assert body["Updates"][1]["Payload"] == "42"
    assert os.environ.get("AWS_ENDPOINT_URL_LAMBDA") != recorder.url  # set for the function only
