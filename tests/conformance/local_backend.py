"""The conformance backend on the local engine: memory store, in-process worker, virtual clock."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

from case_registration import register_case_module
from runner import Case
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
        return self.stepwell.describe(execution_id)

    def send_callback(self, callback_id: str, operation: str, payload: Any) -> None:
        engine = self.stepwell.engine
        if operation == "success":
            engine.send_callback_success(callback_id, json.dumps(payload) if payload is not None else None)
        elif operation == "failure":
            engine.send_callback_failure(callback_id, payload if isinstance(payload, dict) else None)
        elif operation == "heartbeat":
            engine.send_callback_heartbeat(callback_id)
        else:
            raise ValueError(
                f"unknown CallbackAction Operation {operation!r}; allowed: success, failure, heartbeat"
            )

    def stop(self, execution_id: str, error: dict[str, Any] | None) -> None:
        self.stepwell.engine.stop_execution(execution_id, error)

    def run(self, execution_id: str, on_idle: Callable[[], bool]) -> None:
        self.stepwell.run_to_completion(execution_id, on_idle=lambda _: on_idle())

    def advance(self, seconds: float) -> None:
        self.stepwell.clock.advance(seconds)
