"""Invoke with a tenant id: ChainedInvokeStarted carries TenantId and the child runs in that tenant."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import InvokeConfig


@durable_execution
def greet(event: dict[str, Any], context: DurableContext) -> str:
    return f"hello {event['name']}"


WORKFLOWS = {"invoke-5-greet": greet}


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> str:
    tenant = event["Input"]["tenant"]
    config: InvokeConfig[dict[str, Any], str] = InvokeConfig(tenant_id=tenant)
    result: str = context.invoke(
        "invoke-5-greet", {"name": event["Input"]["name"]}, name="call-greet", config=config
    )
    return result
