"""The conformance backend on the local engine: memory store, in-process worker, virtual clock."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from case_registration import register_case_module
from runner import Case
from stepwell.core.arns import ArnContext
from stepwell.testing.local import LocalStepwell


class LocalBackend:
    def __init__(self) -> None:
        self.stepwell = LocalStepwell()

    def start(self, case: Case, module: ModuleType, event: Any) -> str:
        name = f"case.{case.suite}.{case.case_id}"
        register_case_module(module, name, self.stepwell.register, self.stepwell.register_function)
        return self.stepwell.start(name, event)

    def history(self, execution_id: str) -> list[dict[str, Any]]:
        return self.stepwell.history(execution_id)

    def describe(self, execution_id: str) -> dict[str, Any]:
        """As the Stepwell client describes it: with its ARN, in the harness's account and region, where
        the worker's log records name it (stepwell.core.arns)."""
        described = self.stepwell.describe(execution_id)
        return {**described, "executionArn": ArnContext.local().execution_arn(described["ExecutionId"])}

    def send_callback(self, callback_id: str, operation: str, payload: Any) -> None:
        engine = self.stepwell.engine
        if operation == "success":
            engine.send_callback_success(callback_id, payload)
        elif operation == "failure":
            engine.send_callback_failure(callback_id, payload)
        elif operation == "heartbeat":
            engine.send_callback_heartbeat(callback_id)
        else:
            raise ValueError(
                f"unknown CallbackAction Operation {operation!r}; allowed: success, failure, heartbeat"
            )

    def stop(self, execution_id: str, error: dict[str, Any] | None) -> None:
        self.stepwell.engine.stop_execution(execution_id, error)

    def run_until_idle(self) -> None:
        self.stepwell.run_until_idle()

    def now(self) -> float:
        return self.stepwell.clock.now()

    def next_wake_up(self) -> float | None:
        return self.stepwell.queue.next_due_at()

    def advance_to(self, when: float) -> None:
        self.stepwell.clock.advance_to(when)
