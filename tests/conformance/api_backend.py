"""The conformance cases through AWS's durable execution API (the deployed stack's `enable_api` function,
docs/reference/lambda-api.md), with boto3's own `lambda` client: what a user of the AWS SDKs does.

- start: `Invoke` of the case's workflow (`conformance.<suite>.<id>`), `InvocationType=Event`, a
  `DurableExecutionName` of the case and the run, the case's event as `Payload`; the answer's
  `DurableExecutionArn` is the id every other call takes;
- describe: `GetDurableExecution` (with the execution's data: `Result`, `Error`);
- history: `GetDurableExecutionHistory`, every page (`Marker`/`NextMarker`), `IncludeExecutionData=True`;
- callbacks: `SendDurableExecutionCallbackSuccess` / `Failure` / `Heartbeat`;
- stop: `StopDurableExecution`.

The history needs no translation: botocore parses the API's events into the model's `Event` shape, the one
the runner judges (matching.py, tests/history_model.py) and the Stepwell client answers too. Only the
answer's envelope is dropped. Child executions are named by their ARNs, as on AWS, and `describe` and
`history` take them. The harness's timers are the engine's, keyed by Stepwell ids: `engine_id` reads the
Stepwell id an ARN carries (stepwell.features.lambda_api.arns).
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from deployed_backend import workflow_name
from runner import Case
from stepwell.features.lambda_api.arns import ArnContext

# What the API answers besides the data (boto3's envelope).
_ENVELOPE = ("ResponseMetadata",)
# DurableExecutionName: the model's characters, at most 64.
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME_LENGTH = 64
RUN_TAG_LENGTH = 8
# The cases run through the API on the deployed stack (and in-process, test_api_backend.py): one or two
# of each kind of step and of what the runner does from outside, kept few because every call is a
# request to the API function. Straight steps, retries to failure, waits, a history-only (no result)
# case, callbacks answered with a heartbeat and success and with a failure, wait_for_callback, parallel,
# map, a child context failing, invokes of a durable workflow (its child judged too) and of a plain
# function, a stop (the parent's, which stops its child), wait_for_condition.
SUBSET = (
    "step/1-1",
    "step/1-12",
    "wait/2-3",
    "wait/2-4",
    "callback/4-5",
    "callback/4-6",
    "wait_for_callback/7-1",
    "parallel/8-1",
    "map/map-1",
    "child/3-4",
    "invoke/invoke-3",
    "invoke/invoke-6",
    "invoke/invoke-9",
    "wait_for_condition/wfc-1",
)
# Pages are bounded so that longer histories (parallel, map, invoke) are read over several.
DEFAULT_PAGE_SIZE = 25


class LambdaApiExecutions:
    """`deployed_backend.ExecutionApi` on boto3's `lambda` client pointed at the API's URL (`endpoint_url`),
    signed as a principal the deployment lists for operate, read and callbacks."""

    def __init__(self, lambda_client: Any, arns: ArnContext, page_size: int = DEFAULT_PAGE_SIZE) -> None:
        if not 1 <= page_size <= 1000:
            raise ValueError(f"page_size must be 1 to 1000 (the API's MaxItems), got {page_size}")
        self.client = lambda_client
        self.arns = arns
        self.page_size = page_size
        self.run_tag = secrets.token_hex(RUN_TAG_LENGTH // 2)
        self.pages_read = 0

    def execution_name(self, case: Case) -> str:
        """The case's DurableExecutionName: its id and this run's tag (a rerun on one stack starts anew)."""
        readable = _NOT_IN_NAME.sub("-", f"{case.suite}-{case.case_id}")
        return f"{readable[: MAX_NAME_LENGTH - RUN_TAG_LENGTH - 1]}-{self.run_tag}"

    def start(self, case: Case, event: Any) -> str:
        answer = self.client.invoke(
            FunctionName=workflow_name(case),
            InvocationType="Event",
            DurableExecutionName=self.execution_name(case),
            Payload=json.dumps(event).encode("utf-8"),
        )
        if answer.get("StatusCode") != 202 or not answer.get("DurableExecutionArn"):
            raise RuntimeError(
                f"case {case.test_id}: Invoke (Event) answered {answer.get('StatusCode')} without an "
                f"execution ARN: {_without_envelope(answer)}"
            )
        return str(answer["DurableExecutionArn"])

    def describe(self, execution_id: str) -> dict[str, Any]:
        answer = self.client.get_durable_execution(DurableExecutionArn=execution_id)
        return _without_envelope(answer)

    def history(self, execution_id: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        request: dict[str, Any] = {
            "DurableExecutionArn": execution_id,
            "IncludeExecutionData": True,
            "MaxItems": self.page_size,
        }
        while True:
            page = self.client.get_durable_execution_history(**request)
            self.pages_read += 1
            events.extend(page.get("Events", []))
            marker = page.get("NextMarker")
            if not marker:
                return events
            if marker == request.get("Marker"):
                raise RuntimeError(
                    f"GetDurableExecutionHistory of {execution_id} repeats NextMarker {marker!r}"
                )
            request["Marker"] = marker

    def send_callback(self, callback_id: str, operation: str, payload: Any) -> None:
        """`payload` as polling.callback_payload gives it: a success's Result text, a failure's Error."""
        if operation == "success":
            result = {} if payload is None else {"Result": str(payload).encode("utf-8")}
            self.client.send_durable_execution_callback_success(CallbackId=callback_id, **result)
        elif operation == "failure":
            error = {} if payload is None else {"Error": payload}
            self.client.send_durable_execution_callback_failure(CallbackId=callback_id, **error)
        elif operation == "heartbeat":
            self.client.send_durable_execution_callback_heartbeat(CallbackId=callback_id)
        else:
            raise ValueError(
                f"unknown CallbackAction Operation {operation!r}; allowed: success, failure, heartbeat"
            )

    def stop(self, execution_id: str, error: dict[str, Any] | None) -> None:
        given = {} if error is None else {"Error": error}
        self.client.stop_durable_execution(DurableExecutionArn=execution_id, **given)

    def engine_id(self, execution_id: str) -> str:
        return self.arns.execution_id(execution_id)


def _without_envelope(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in answer.items() if key not in _ENVELOPE}
