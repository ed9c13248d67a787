"""Example workflow code packaged with the worker (examples/complete passes this folder as workflows_dir).

The worker imports it as `workflows.orders` at start; importing registers the workflow.
"""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.core.registry import workflow


def _total_cents(lines: list[dict[str, Any]]) -> int:
    return sum(int(line["quantity"]) * int(line["unit_price_cents"]) for line in lines)


@workflow("orders.confirm")
@durable_execution
def confirm_order(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    """Confirm an order: total its lines in a checkpointed step and report the result."""
    lines = event.get("lines", [])
    total_cents = context.step(lambda _: _total_cents(lines), name="total-lines")
    return {"order_id": event.get("order_id"), "status": "confirmed", "total_cents": total_cents}
