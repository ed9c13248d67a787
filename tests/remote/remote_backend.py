"""The conformance backend with each case's handler run as a remote durable function (issue 41): the local
engine (memory store, virtual clock) invokes it as the user's own Lambda function would be invoked, the
handler's SDK (its own LambdaClient, the one it makes from the environment when deployed) checkpoints
through the API's handler, and its end comes back to the worker as a destination record
(tests/remote/harness.py). The case's other workflows and functions run in the worker as usual.

`STEPWELL_CONFORMANCE_BACKEND=remote_backend:RemoteBackend` (with tests/remote on the path, as
tests/remote/test_conformance_remote.py puts it) runs every case this way.

`language`: the case's Python handler (the default), or its JavaScript twin
(tests/conformance_js/handlers/<suite>/<id>.mjs, written with @aws/durable-execution-sdk-js) run in a warm
`node` worker of the local Lambda runtime (tests/remote/node_functions.py), its SDK's client pointed at the
same front by AWS_ENDPOINT_URL_LAMBDA. Either way the case's other workflows and functions (its Python
module's WORKFLOWS and FUNCTIONS, the targets of an invoke) run in the worker.
"""

from __future__ import annotations

import shutil
import sys
from enum import Enum
from pathlib import Path
from types import ModuleType
from typing import Any

from aws_durable_execution_sdk_python.lambda_service import LambdaClient
from stepwell.core.remote_functions import RemoteFunction

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"
REPO_ROOT = Path(__file__).resolve().parents[2]
for path in (CONFORMANCE, REPO_ROOT):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from case_registration import register_case_module  # noqa: E402
from local_backend import LocalBackend  # noqa: E402
from runner import Case, CaseResult, discover_cases, run_case  # noqa: E402

from tests.api.conftest import OPERATOR, REGION  # noqa: E402
from tests.remote.harness import function_arn, remote_stack  # noqa: E402
from tests.remote.node_functions import NodeFunction, node_missing_reason  # noqa: E402

# The JavaScript twins of the cases' handlers: <suite>/<id>.mjs exporting `handler`.
JS_HANDLERS_DIR = REPO_ROOT / "tests" / "conformance_js" / "handlers"


class Language(Enum):
    """Which SDK the case's own function is written with."""

    PYTHON = "Python"
    JAVASCRIPT = "JavaScript"


def js_handler_path(case: Case) -> Path:
    """Where the JavaScript twin of `case`'s handler is (it may not exist: the case is not mapped)."""
    return JS_HANDLERS_DIR / case.suite / f"{case.case_id}.mjs"


class RemoteBackend(LocalBackend):
    def __init__(self, language: Language = Language.PYTHON) -> None:
        self.language = language
        self._node = shutil.which("node")
        if language is Language.JAVASCRIPT and node_missing_reason(self._node) is not None:
            raise RuntimeError(f"JavaScript functions cannot run: {node_missing_reason(self._node)}")
        self.node_functions: list[NodeFunction] = []
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
            registry.allow_remote_functions(self._remote, self.stack.fake_lambda)
            self.stack.handlers[function_arn(workflow)] = self._function(case, workflow, handler)

        register_case_module(module, name, register, self.stepwell.register_function)
        return self.stepwell.start(name, event)

    def _function(self, case: Case, workflow: str, handler: Any) -> Any:
        """The case's own function in the backend's language: its Python handler, or a warm node worker
        running the JavaScript twin."""
        if self.language is Language.PYTHON:
            return handler
        path = js_handler_path(case)
        if not path.is_file():
            raise FileNotFoundError(f"case {case.test_id} has no JavaScript handler: no {path}")
        assert self._node is not None  # checked when the backend was made
        function = NodeFunction(
            name=workflow,
            source_dir=JS_HANDLERS_DIR,
            handler=f"{case.suite}/{case.case_id}.handler",
            endpoint_url=self.stack.front.url,
            identity=OPERATOR,
            region=REGION,
            node=self._node,
        )
        self.node_functions.append(function)
        return function

    def run_until_idle(self) -> None:
        self.stepwell.run_until_idle()
        self.stack.run_pending()

    def close(self) -> None:
        LambdaClient._cached_boto_client = self._previous_client
        for function in self.node_functions:
            function.close()
        self.stack.close()


def run_as_remote_function(case: Case, language: Language) -> tuple[CaseResult, str]:
    """Run `case` with its handler in `language` as a remote function on a backend of its own; the result
    and, for a failure, a report naming the case and the language (its errors, the history, and a
    JavaScript function's log)."""
    backend = RemoteBackend(language)
    try:
        result = run_case(case, backend)
        logs = [function.log_text() for function in backend.node_functions] if not result.passed else []
    finally:
        backend.close()
    report = [f"{case.test_id} ({language.value.lower()}, as a remote function):", *result.errors]
    report += ["actual history:", *(str(event) for event in result.history)]
    report += [f"function log:\n{log[-4000:]}" for log in logs]
    return result, "\n".join(report)


__all__ = [
    "Case",
    "CaseResult",
    "Language",
    "RemoteBackend",
    "discover_cases",
    "js_handler_path",
    "run_as_remote_function",
    "run_case",
]
