from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import ParallelConfig


@durable_execution
def handler(event: dict, context: DurableContext) -> list:
    branches = [lambda _: "r0", lambda _: "r1", lambda _: "r2"]
    return context.parallel(
        branches, name="concurrent", config=ParallelConfig(max_concurrency=2)
    ).get_results()
