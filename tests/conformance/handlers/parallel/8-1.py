from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import ParallelConfig


def branch0(context: DurableContext) -> str:
    return context.step(lambda _: "task-1")


def branch1(context: DurableContext) -> str:
    return context.step(lambda _: "task-2")


@durable_execution
def handler(event: dict, context: DurableContext) -> list:
    batch = context.parallel([branch0, branch1], name="parallel", config=ParallelConfig(max_concurrency=1))
    return batch.get_results()
