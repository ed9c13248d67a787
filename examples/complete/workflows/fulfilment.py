"""The order story that `make demo` runs: workflow code packaged with the worker (examples/complete passes
this folder as `workflows_dir`, and the worker imports `workflows.fulfilment` at start).

An order is reserved with a flaky payment provider (the first attempt fails, the retry succeeds), waits
three days for the cooling-off period, waits for a manager's approval sent through a callback, then
fans out to invoicing, shipping and notification in parallel.
"""

from __future__ import annotations

import json
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import (
    Duration,
    StepConfig,
    WaitForCallbackConfig,
)
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy
from stepwell.registry import workflow


class PaymentProviderUnavailable(Exception):
    """The payment provider's first answer in the demo: a transient error the step retries."""


def _total_cents(order: dict[str, Any]) -> int:
    return sum(int(line["quantity"]) * int(line["unit_price_cents"]) for line in order.get("lines", []))


def _charge(order: dict[str, Any], step: StepContext) -> dict[str, Any]:
    # Flaky on purpose: the provider times out on the first attempt of every order.
    if step.attempt < 2:
        raise PaymentProviderUnavailable(f"payment provider timed out for order {order['order_id']}")
    order_id = order["order_id"]
    return {"charge_id": f"ch-{order_id}", "amount_cents": _total_cents(order), "attempt": step.attempt}


FLAKY_RETRY = StepConfig(
    retry_strategy=create_retry_strategy(
        RetryStrategyConfig(max_attempts=3, initial_delay=Duration.from_seconds(2), backoff_rate=2.0)
    )
)


@workflow("orders.fulfil")
@durable_execution
def fulfil_order(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    order = dict(event)
    charge = context.step(lambda step: _charge(order, step), name="charge-payment", config=FLAKY_RETRY)

    # Cooling-off period: the customer may still cancel. Stepwell parks the execution on a one-time
    # EventBridge Scheduler schedule; the demo's scheduler fast-forwards it.
    context.wait(Duration.from_days(3), name="cooling-off")

    approval = context.wait_for_callback(
        lambda callback_id, _ctx: None,  # the approver reads the callback id from the execution's history
        name="manager-approval",
        config=WaitForCallbackConfig(timeout=Duration.from_days(7)),
    )

    def invoice(ctx: DurableContext) -> str:
        return ctx.step(lambda _: f"INV-{order['order_id']}", name="issue-invoice")

    def ship(ctx: DurableContext) -> str:
        parcels = len(order.get("lines", []))
        return ctx.step(lambda _: f"SHIP-{order['order_id']}-{parcels}", name="book-courier")

    def notify(ctx: DurableContext) -> str:
        return ctx.step(lambda _: f"sent to {order.get('email', 'customer')}", name="email-customer")

    fan_out = context.parallel([invoice, ship, notify], name="fulfilment").get_results()
    return {
        "order_id": order["order_id"],
        "charge": charge,
        "approval": json.loads(approval) if isinstance(approval, str) else approval,
        "invoice": fan_out[0],
        "shipment": fan_out[1],
        "notification": fan_out[2],
    }
