from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, ParallelConfig


def branch0(context: DurableContext) -> str:
    return context.step(lambda _: "b0")


def branch1(context: DurableContext) -> str:
    context.wait(Duration.from_seconds(2))
    return "b1"


@durable_execution
def handler(event: dict, context: DurableContext) -> list:
    return context.parallel(
        [branch0, branch1], name="suspending", config=ParallelConfig(max_concurrency=1)
    ).get_results()
