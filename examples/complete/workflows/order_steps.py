"""The order story's step bodies and settings, shared by every release of `orders.fulfil`
(workflows/fulfilment.py, and releases/v2/fulfilment.py, which `make demo` deploys mid-story)."""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext
from aws_durable_execution_sdk_python.config import Duration, StepConfig, WaitForCallbackConfig
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy
from aws_durable_execution_sdk_python.serdes import JsonSerDes


class PaymentProviderUnavailable(Exception):
    """The payment provider's first answer in the demo: a transient error the step retries."""


def total_cents(order: dict[str, Any]) -> int:
    return sum(int(line["quantity"]) * int(line["unit_price_cents"]) for line in order.get("lines", []))


def charge(order: dict[str, Any], step: StepContext) -> dict[str, Any]:
    # Flaky on purpose: the provider times out on the first attempt of every order.
    if step.attempt < 2:
        raise PaymentProviderUnavailable(f"payment provider timed out for order {order['order_id']}")
    order_id = order["order_id"]
    return {"charge_id": f"ch-{order_id}", "amount_cents": total_cents(order), "attempt": step.attempt}


FLAKY_RETRY = StepConfig(
    retry_strategy=create_retry_strategy(
        RetryStrategyConfig(max_attempts=3, initial_delay=Duration.from_seconds(2), backoff_rate=2.0)
    )
)
COOLING_OFF = Duration.from_days(3)
# The approver sends JSON (the callback's result is text): the serdes hands the workflow its value.
APPROVAL = WaitForCallbackConfig(timeout=Duration.from_days(7), serdes=JsonSerDes())


def fulfil_in_parallel(context: DurableContext, order: dict[str, Any]) -> list[str]:
    """Invoicing, shipping and notification as three branches of one parallel operation."""

    def invoice(ctx: DurableContext) -> str:
        return ctx.step(lambda _: f"INV-{order['order_id']}", name="issue-invoice")

    def ship(ctx: DurableContext) -> str:
        parcels = len(order.get("lines", []))
        return ctx.step(lambda _: f"SHIP-{order['order_id']}-{parcels}", name="book-courier")

    def notify(ctx: DurableContext) -> str:
        return ctx.step(lambda _: f"sent to {order.get('email', 'customer')}", name="email-customer")

    results: list[str] = context.parallel([invoice, ship, notify], name="fulfilment").get_results()
    return results
