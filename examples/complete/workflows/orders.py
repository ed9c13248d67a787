"""Example workflow code packaged with the worker (examples/complete passes this folder as workflows_dir).

The worker imports it as `workflows.orders` at start; importing registers the workflow.
"""

from __future__ import annotations

from typing import Any

from stepwell.registry import workflow


@workflow("orders.confirm")
def confirm_order(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Confirm an order: total its lines and report the result."""
    lines = event.get("lines", [])
    total_cents = sum(int(line["quantity"]) * int(line["unit_price_cents"]) for line in lines)
    return {"order_id": event.get("order_id"), "status": "confirmed", "total_cents": total_cents}
