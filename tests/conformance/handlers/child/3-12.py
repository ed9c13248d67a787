import sys
import time

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.lambda_service import OperationStatus, OperationType

# Executions whose first invocation already crashed (the crash happens once per execution).
_CRASHED: set[str] = set()


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    value = event["Input"]
    state = context.state
    execution = state.durable_execution_arn

    def step_started() -> bool:
        return any(
            op.operation_type is OperationType.STEP and op.status is OperationStatus.STARTED
            for op in state.operations.values()
        )

    def crash_once(step_context: StepContext) -> str:
        if execution not in _CRASHED:
            _CRASHED.add(execution)
            # StepStarted is checkpointed asynchronously: the process dies once it is durable.
            for _ in range(1000):
                if step_started():
                    break
                time.sleep(0.005)
            sys.exit(1)
        return value

    return context.run_in_child_context(lambda child: child.step(crash_once))
