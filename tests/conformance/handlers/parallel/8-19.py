from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import ParallelConfig


@durable_execution
def handler(event: dict, context: DurableContext) -> list:
    config = ParallelConfig(max_concurrency=0)  # invalid: the SDK rejects it before any branch runs
    return context.parallel([lambda _: "a", lambda _: "b"], name="invalid", config=config).get_results()
