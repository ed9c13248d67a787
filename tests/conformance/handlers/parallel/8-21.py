from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import ParallelConfig


def inner_0(context: DurableContext) -> str:
    return context.step(lambda _: "i1")


def inner_1(context: DurableContext) -> str:
    return context.step(lambda _: "i2")


def branch_a(context: DurableContext) -> list:
    return context.parallel(
        [inner_0, inner_1], name="inner", config=ParallelConfig(max_concurrency=1)
    ).get_results()


@durable_execution
def handler(event: dict, context: DurableContext) -> list:
    return context.parallel([branch_a], name="outer", config=ParallelConfig(max_concurrency=1)).get_results()
