from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import NestingType, ParallelConfig


def branch_a(context: DurableContext) -> str:
    return context.step(lambda _: "fa")


def branch_b(context: DurableContext) -> str:
    return context.step(lambda _: "fb")


@durable_execution
def handler(event: dict, context: DurableContext) -> list:
    config = ParallelConfig(max_concurrency=1, nesting_type=NestingType.FLAT)
    return context.parallel([branch_a, branch_b], name="flat", config=config).get_results()
