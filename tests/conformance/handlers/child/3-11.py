from aws_durable_execution_sdk_python import DurableContext, durable_execution, durable_with_child_context
from aws_durable_execution_sdk_python.config import Duration


@durable_with_child_context
def large_result(child: DurableContext, value: str) -> dict:
    # Replay logging enabled: the re-execution in ReplayChildren mode stays visible in the logs.
    child.logger.with_is_replaying(lambda: False).info(f"building a large result for {value}")
    small = child.step(lambda _: value)
    # Over the 256 KB checkpoint limit: the SDK stores ReplayChildren and rebuilds it on replay.
    return {"value": small, "padding": small * 40_000}


@durable_execution
def handler(event: dict, context: DurableContext) -> int:
    result = context.run_in_child_context(large_result(event["Input"]))
    context.wait(Duration.from_seconds(1))
    return len(result["padding"])
