from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import ParallelConfig


@durable_execution
def handler(event: dict, context: DurableContext) -> list:
    branches = [lambda _: "hello", lambda _: 42, lambda _: {"k": "v"}]
    return context.parallel(branches, name="hetero", config=ParallelConfig(max_concurrency=1)).get_results()
