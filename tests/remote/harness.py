"""Remote durable functions in-process (issue 41): the engine on the local harness, a fake Lambda whose
Event invokes run a Python handler written with the AWS durable SDK in a thread of its own (as Lambda runs
it, elsewhere), the SDK's own LambdaClient (boto3's `lambda` client) pointed at the API handler behind an
AWS_IAM function URL front end, and each invocation's end handed back to the worker's entry as Lambda's
destination record (docs: invocation-async-retain-records)."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
from aws_durable_execution_sdk_python import durable_execution
from botocore.config import Config
from stepwell.core.engine import Engine
from stepwell.core.invoke_targets import LambdaInvokeRefused
from stepwell.core.registry import Registry
from stepwell.core.remote_functions import RemoteFunction
from stepwell.core.worker import InvocationContext
from stepwell.features.lambda_api.context import ApiSettings
from stepwell.features.lambda_api.handler import LambdaApiHandler
from stepwell.ports import ExecutionStore
from stepwell.testing.local import LocalStepwell
from stepwell.wiring.entry import EntryRuntime, MessageResult

from tests.api.conftest import ACCESS, ACCOUNT, ARNS, CLIENT_CONFIG, OPERATOR, REGION, resource_policy
from tests.api.iam_url_front import IamFunctionUrlFront

FUNCTION_PREFIX = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:"


def function_arn(name: str) -> str:
    return FUNCTION_PREFIX + name


@dataclass
class EventInvoke:
    """One asynchronous invoke the worker made: the function, its qualifier and the payload (parsed)."""

    function: str
    qualifier: str | None
    payload: dict[str, Any]


class FakeLambda:
    """Lambda's Event invoke (AsyncLambdaInvoker): records each invoke for the test to run; refuses the
    functions in `refusals` (ARN -> (error code, message)) as Lambda refuses them."""

    def __init__(self) -> None:
        self.pending: list[EventInvoke] = []
        self.invoked: list[EventInvoke] = []
        self.refusals: dict[str, tuple[str, str]] = {}

    def invoke_event(self, function: str, qualifier: str | None, payload: bytes) -> None:
        if function in self.refusals:
            raise LambdaInvokeRefused(*self.refusals[function])
        invoke = EventInvoke(function, qualifier, json.loads(payload))
        self.pending.append(invoke)
        self.invoked.append(invoke)


@dataclass
class Ran:
    """What one invocation of a function did: its output, or the error it raised."""

    invoke: EventInvoke
    output: Any = None
    error: BaseException | None = None


@dataclass
class RemoteStack:
    local: LocalStepwell
    fake_lambda: FakeLambda
    front: IamFunctionUrlFront
    client: Any
    entry: EntryRuntime
    handlers: dict[str, Callable[..., Any]] = field(default_factory=dict)
    results: list[MessageResult] = field(default_factory=list)

    def run_invoke(self, invoke: EventInvoke) -> Ran:
        """Run the function of one Event invoke in a thread of its own (Lambda's, not the worker's)."""
        handler = self.handlers[invoke.function]
        ran = Ran(invoke)

        def run() -> None:
            try:
                ran.output = handler(invoke.payload, InvocationContext(uuid.uuid4().hex))
            except BaseException as error:  # the function's error, as Lambda reports it
                ran.error = error

        thread = threading.Thread(target=run, name="remote-function")
        thread.start()
        thread.join(120)
        assert not thread.is_alive(), "the function did not end"
        return ran

    def deliver(self, record: dict[str, Any]) -> MessageResult:
        """Hand a destination record to the worker's entry, as the work queue does."""
        result = self.entry.handle_body(json.loads(json.dumps(record)))
        self.results.append(result)
        return result

    def run_pending(self) -> bool:
        """Run every pending invocation and deliver its destination record; False when none was pending."""
        ran_any = False
        while self.fake_lambda.pending:
            invoke = self.fake_lambda.pending.pop(0)
            self.deliver(destination_record(self.run_invoke(invoke)))
            self.local.run_until_idle()
            ran_any = True
        return ran_any

    def run(self, execution_id: str, on_idle: Callable[[LocalStepwell], bool] | None = None) -> Any:
        """Run the execution to its end (run_to_completion), running the functions it invokes."""

        def idle(local: LocalStepwell) -> bool:
            return self.run_pending() or (on_idle is not None and on_idle(local))

        return self.local.run_to_completion(execution_id, on_idle=idle, max_steps=2000)

    def unvalidated_client(self) -> Any:
        """A `lambda` client that sends what it is given (no parameter validation): hostile input."""
        return boto3.client(
            "lambda",
            endpoint_url=self.front.url,
            region_name=REGION,
            config=CLIENT_CONFIG.merge(Config(parameter_validation=False)),
            **OPERATOR.client_kwargs(),
        )

    def close(self) -> None:
        self.front.close()


def destination_record(ran: Ran) -> dict[str, Any]:
    """Lambda's destination record of an asynchronous invocation (maximum_retry_attempts 0): on success
    the function's return value; on failure its error, condition RetriesExhausted."""
    failed = ran.error is not None
    response: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
    if failed:
        response["functionError"] = "Unhandled"
    return {
        "version": "1.0",
        "timestamp": "2026-11-28T00:00:00.000Z",
        "requestContext": {
            "requestId": uuid.uuid4().hex,
            "functionArn": ran.invoke.function + ":$LATEST",
            "condition": "RetriesExhausted" if failed else "Success",
            "approximateInvokeCount": 1,
        },
        "requestPayload": ran.invoke.payload,
        "responseContext": response,
        "responsePayload": _reported(ran.error) if ran.error is not None else ran.output,
    }


def _reported(error: BaseException) -> dict[str, Any]:
    """A function error as Lambda reports it: a process that exits is Runtime.ExitError; a function in
    another runtime (tests/remote/node_functions.py) names its own errorType."""
    if isinstance(error, SystemExit):
        return {
            "errorType": "Runtime.ExitError",
            "errorMessage": f"Error: Runtime exited with error: exit status {error.code}",
        }
    return {"errorType": getattr(error, "error_type", type(error).__name__), "errorMessage": str(error)}


def remote_stack(
    remote: dict[str, Callable[..., Any]],
    in_worker: dict[str, Callable[..., Any]] | None = None,
    timeout_seconds: int = 900,
    store: ExecutionStore | None = None,
    api_knows_workflows: bool = False,
) -> RemoteStack:
    """`remote`: workflow name -> the undecorated handler function, deployed as "its own function"; the
    `in_worker` ones (undecorated too) are registered in the worker as usual. `store`: the store the
    worker and the API share (the harness's memory store by default). `api_knows_workflows`: the API's
    engine resolves a function's `context.invoke` targets with the worker's registry (the deployed API
    function has none of it: docs/reference/lambda-api.md)."""
    registry = Registry()
    for name, fn in (in_worker or {}).items():
        registry.register(name, durable_execution(fn))
    local = LocalStepwell(registry)
    if store is not None:  # the same harness on another store (its unversioned code built on it)
        local.store = store
        local._unversioned = local._code(None, registry)
    fake_lambda = FakeLambda()
    functions = {name: RemoteFunction(function_arn(name), None, timeout_seconds) for name in remote}
    registry.allow_remote_functions(functions, fake_lambda)
    # The API function is another process: an engine of its own on the same store.
    api_engine = Engine(
        store=local.store,
        queue=local.queue,
        timers=local.queue,
        payloads=local.payloads,
        clock=local.clock,
        registry=registry if api_knows_workflows else Registry(),
    )
    settings = ApiSettings(arns=ARNS, access=ACCESS, retention_days=30, max_wait_seconds=5.0)
    handler = LambdaApiHandler(api_engine, settings)
    front = IamFunctionUrlFront(
        lambda event: handler.handle(event, 60.0), REGION, lambda: resource_policy(ACCESS)
    )
    front.register(OPERATOR)
    client = boto3.client(
        "lambda", endpoint_url=front.url, region_name=REGION, config=CLIENT_CONFIG, **OPERATOR.client_kwargs()
    )
    stack = RemoteStack(local, fake_lambda, front, client, EntryRuntime(local.engine))
    for name, fn in remote.items():
        stack.handlers[function_arn(name)] = durable_execution(fn, boto3_client=client)
    return stack
