"""The bench's remote-function workflow (section `remote`), in Python: `steps` steps in a row, the first
burning `burn_ms` of CPU. The same file runs in Stepwell's worker (registered as it is) and deployed as
its own function (handler `steps.handler`), whose SDK checkpoints through AWS_ENDPOINT_URL_LAMBDA."""

from __future__ import annotations

import time
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution


def burn(milliseconds: float) -> None:
    """Busy the CPU for `milliseconds` of this process's CPU time (the user's own work)."""
    end = time.process_time() + milliseconds / 1000
    while time.process_time() < end:
        pass


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    total = 0
    for index in range(int(event["steps"])):

        def work(_: StepContext, index: int = index) -> int:
            if index == 0:
                burn(float(event.get("burn_ms", 0)))
            return index + 1

        total += context.step(work, name=f"step-{index}")
    return {"steps": int(event["steps"]), "total": total}
