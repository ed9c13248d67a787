"""The conformance backend with each case's handler run as a remote durable function (issue 41): the local
engine (memory store, virtual clock) invokes it as the user's own Lambda function would be invoked, the
handler's SDK (its own LambdaClient, the one it makes from the environment when deployed) checkpoints
through the API's handler, and its end comes back to the worker as a destination record
(tests/remote/harness.py). The case's other workflows and functions run in the worker as usual.

`STEPWELL_CONFORMANCE_BACKEND=remote_backend:RemoteBackend` (with tests/remote on the path, as
tests/remote/test_conformance_remote.py puts it) runs every case this way.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from aws_durable_execution_sdk_python.lambda_service import LambdaClient
from stepwell.core.remote_functions import RemoteFunction
from stepwell.wiring.build import remote_execution_arn

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"
REPO_ROOT = Path(__file__).resolve().parents[2]
for path in (CONFORMANCE, REPO_ROOT):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from case_registration import register_case_module  # noqa: E402
from local_backend import LocalBackend  # noqa: E402
from runner import Case, discover_cases, run_case  # noqa: E402

from tests.remote.harness import function_arn, remote_stack  # noqa: E402


class _ExecutionIds(logging.Filter):
    """The execution a remote function's log record names is the one its ARN maps to: the records the SDK
    writes (through the root logger) carry the ARN the function was handed, which names the execution as
    the Stepwell id does the records of an in-worker run (AWS's log filter: the execution's ARN)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[str, str] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        arn = getattr(record, "executionArn", None)
        if isinstance(arn, str) and arn in self.ids:
            record.executionArn = self.ids[arn]
        return True


class RemoteBackend(LocalBackend):
    def __init__(self) -> None:
        self._ids = _ExecutionIds()
        logging.getLogger().addFilter(self._ids)
        self.stack = remote_stack({}, api_knows_workflows=True)
        self.stepwell = self.stack.local
        self._remote: dict[str, RemoteFunction] = {}
        # The deployed SDK makes its client from the environment (AWS_ENDPOINT_URL_LAMBDA): here, the one
        # signed for the front end, which every @durable_execution handler of this process then uses.
        self._previous_client = LambdaClient._cached_boto_client
        LambdaClient._cached_boto_client = self.stack.client

    def start(self, case: Case, module: ModuleType, event: Any) -> str:
        name = f"case.{case.suite}.{case.case_id}"
        registry = self.stepwell.registry

        def register(workflow: str, handler: Any, **options: Any) -> None:
            if workflow != name:
                registry.register(workflow, handler, **options)
                return
            self._remote[workflow] = RemoteFunction(function_arn(workflow))
            registry.allow_remote_functions(self._remote, self.stack.fake_lambda, remote_execution_arn)
            self.stack.handlers[function_arn(workflow)] = handler

        register_case_module(module, name, register, self.stepwell.register_function)
        execution_id = self.stepwell.start(name, event)
        self._ids.ids[remote_execution_arn(execution_id, function_arn(name))] = execution_id
        return execution_id

    def run_until_idle(self) -> None:
        self.stepwell.run_until_idle()
        self.stack.run_pending()

    def close(self) -> None:
        logging.getLogger().removeFilter(self._ids)
        LambdaClient._cached_boto_client = self._previous_client
        self.stack.close()


__all__ = ["Case", "RemoteBackend", "discover_cases", "run_case"]
