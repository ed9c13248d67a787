"""A user workflow module: registers on import, as the worker's STEPWELL_WORKFLOW_MODULES expects."""

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.core.registry import workflow


@workflow("imported-greeting")
@durable_execution
def imported_greeting(event: dict, context: DurableContext) -> str:
    return context.step(lambda _: "hello from an imported module")
