from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import ParallelConfig


@durable_execution
def handler(event: dict, context: DurableContext) -> list:
    batch = context.parallel([lambda _: "alpha", lambda _: "beta"], config=ParallelConfig(max_concurrency=1))
    return batch.get_results()
