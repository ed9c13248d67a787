"""Actions of the order DAG (orders.json): stand-ins for the invoicing, shipping and notification services.

Each returns what the real service would (an invoice number, a shipment request id); LOG keeps the calls so
a local run can show what happened.
"""

from __future__ import annotations

import hashlib
from typing import Any

from stepwell.features.definitions.actions import (
    ActionContext,
    ActionRegistry,
    PermanentActionError,
    default_actions,
)

LOG: list[tuple[str, dict[str, Any]]] = []


def _ref(prefix: str, order: str) -> str:
    return f"{prefix}-{hashlib.sha256(order.encode()).hexdigest()[:8].upper()}"


def create_invoice(inputs: dict[str, Any], context: ActionContext) -> dict[str, Any]:
    amount = inputs.get("amount")
    if not isinstance(amount, (int, float)) or isinstance(amount, bool) or amount <= 0:
        raise PermanentActionError(f"orders.create_invoice: amount must be a positive number, got {amount!r}")
    LOG.append(("create_invoice", inputs))
    return {"number": _ref("INV", str(inputs["order"])), "amount": amount}


def request_shipment(inputs: dict[str, Any], context: ActionContext) -> dict[str, Any]:
    LOG.append(("request_shipment", inputs))
    return {"request": _ref("SHP", str(inputs["order"]))}


def escalate(inputs: dict[str, Any], context: ActionContext) -> None:
    LOG.append(("escalate", inputs))


def notify_customer(inputs: dict[str, Any], context: ActionContext) -> None:
    LOG.append(("notify_customer", inputs))


def register(registry: ActionRegistry) -> None:
    registry.register("orders.create_invoice", create_invoice)
    registry.register("orders.request_shipment", request_shipment)
    registry.register("orders.escalate", escalate)
    registry.register("orders.notify_customer", notify_customer)


register(default_actions)
