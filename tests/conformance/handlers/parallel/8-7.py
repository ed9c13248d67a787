from aws_durable_execution_sdk_python import BatchResult, DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CompletionConfig, ParallelConfig


def projection(batch: BatchResult) -> dict:
    return {
        "completionReason": batch.completion_reason.value,
        "status": batch.status.value,
        "successCount": batch.success_count,
        "failureCount": batch.failure_count,
        "totalCount": batch.total_count,
    }


def ok(_: DurableContext) -> str:
    return "ok"


def fail(_: DurableContext) -> str:
    raise RuntimeError("branch failed")


@durable_execution
def handler(event: dict, context: DurableContext) -> list:
    config = ParallelConfig(max_concurrency=1, completion_config=CompletionConfig(tolerated_failure_count=0))
    batch = context.parallel([fail, ok], name="throwing", config=config)
    batch.throw_if_error()
    return batch.get_results()
