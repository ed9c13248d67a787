"""The conformance backend through AWS's durable execution API, in-process: the local engine (memory store,
virtual clock) runs the executions as local_backend.py's does, and every start, read, callback and stop
goes through the API's handler (stepwell.features.lambda_api) behind an AWS_IAM function URL front end
(tests/api/iam_url_front.py), called with boto3's own `lambda` client (api_backend.LambdaApiExecutions).

`STEPWELL_CONFORMANCE_BACKEND=local_api_backend:LocalApiBackend` runs every case this way: a case that
passes on the local backend and fails here is the API's difference.
"""

from __future__ import annotations

import sys
import weakref
from types import ModuleType
from typing import Any

import boto3
from api_backend import LambdaApiExecutions
from botocore.config import Config
from case_registration import register_case_module
from deployed_backend import workflow_name
from runner import REPO_ROOT, Case
from stepwell.features.lambda_api.access import AccessPolicy, Principal
from stepwell.features.lambda_api.arns import ArnContext
from stepwell.features.lambda_api.context import ApiSettings
from stepwell.features.lambda_api.handler import LambdaApiHandler
from stepwell.testing.local import LocalStepwell

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.api.iam_url_front import IamFunctionUrlFront, Identity

# The worker's default (no Lambda context): its log records and the API's answers name the same ARN.
HARNESS = ArnContext.local()
REGION = HARNESS.region
ACCOUNT = HARNESS.account
ROLE = f"arn:aws:iam::{ACCOUNT}:role/conformance-runner"
CALLER = Identity(
    "AKIACONFORMANCE00001",
    "conformance-secret",
    f"arn:aws:sts::{ACCOUNT}:assumed-role/conformance-runner/cases",
    ACCOUNT,
    "AROACONFORMANCE:cases",
    "conformance-session-token",
)
# The runner's calls are never refused on purpose: an error is the case's, not a reason to retry.
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 1}, read_timeout=60)
HANDLER_SECONDS_LEFT = 60.0


class LocalApiBackend:
    def __init__(self) -> None:
        self.stepwell = LocalStepwell()
        arns = HARNESS
        settings = ApiSettings(
            arns=arns, access=AccessPolicy.from_lists(read=[ROLE], operate=[ROLE], callbacks=[ROLE])
        )
        handler = LambdaApiHandler(self.stepwell.engine, settings)
        principals = [Principal.parse(ROLE)]
        self.front = IamFunctionUrlFront(
            lambda event: handler.handle(event, HANDLER_SECONDS_LEFT), REGION, lambda: principals
        )
        self.front.register(CALLER)
        # The front's server thread goes with the backend (the runner makes one backend per case).
        self._closer = weakref.finalize(self, self.front.close)
        client = boto3.client(
            "lambda",
            endpoint_url=self.front.url,
            region_name=REGION,
            config=CLIENT_CONFIG,
            **CALLER.client_kwargs(),
        )
        self.api = LambdaApiExecutions(client, arns)

    def close(self) -> None:
        self._closer()

    def start(self, case: Case, module: ModuleType, event: Any) -> str:
        register_case_module(
            module, workflow_name(case), self.stepwell.register, self.stepwell.register_function
        )
        return self.api.start(case, event)

    def history(self, execution_id: str) -> list[dict[str, Any]]:
        return self.api.history(execution_id)

    def describe(self, execution_id: str) -> dict[str, Any]:
        return self.api.describe(execution_id)

    def send_callback(self, callback_id: str, operation: str, payload: Any) -> None:
        self.api.send_callback(callback_id, operation, payload)

    def stop(self, execution_id: str, error: dict[str, Any] | None) -> None:
        self.api.stop(execution_id, error)

    def run_until_idle(self) -> None:
        self.stepwell.run_until_idle()

    def now(self) -> float:
        return self.stepwell.clock.now()

    def next_wake_up(self) -> float | None:
        return self.stepwell.queue.next_due_at()

    def advance_to(self, when: float) -> None:
        self.stepwell.clock.advance_to(when)
