from aws_durable_execution_sdk_python import DurableContext, ParallelBranch, durable_execution
from aws_durable_execution_sdk_python.config import ParallelConfig


@durable_execution
def handler(event: dict, context: DurableContext) -> list:
    branches = [
        ParallelBranch(func=lambda _: "one", name="first"),
        ParallelBranch(func=lambda _: "two", name="second"),
    ]
    batch = context.parallel(branches, name="named", config=ParallelConfig(max_concurrency=1))
    return batch.get_results()
