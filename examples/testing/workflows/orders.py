"""The worked example of docs/testing-your-workflows.md: one order, from payment to parcel.

Charge the card (a busy payment provider is retried after 30 s, then 60 s, then 120 s), ask the warehouse
to pick the order and wait up to three days for its callback, then ship; when the warehouse never answers,
refund.

Packaged with the worker (examples/testing/main.tf passes this folder as `workflows_dir`); the worker imports
it as `workflows.orders`, and the example's tests import it as `orders` (the folder is on their path).
"""

from __future__ import annotations

import logging
from typing import Any

from aws_durable_execution_sdk_python import CallbackTimeoutError, DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import (
    Duration,
    JitterStrategy,
    StepConfig,
    WaitForCallbackConfig,
)
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy
from aws_durable_execution_sdk_python.serdes import JsonSerDes
from stepwell.core.registry import workflow

WORKFLOW = "shop.order"
logger = logging.getLogger(__name__)


class PaymentProviderBusy(Exception):
    """The provider asks us to come back later: worth a retry (a declined card is not)."""


# Up to 4 attempts, 30 s, 60 s and 120 s apart. No jitter, so the delays are exact (the SDK's default jitter
# draws a random delay up to the computed one, which spreads retries out in production).
CHARGE = StepConfig(
    retry_strategy=create_retry_strategy(
        RetryStrategyConfig(
            max_attempts=4,
            initial_delay=Duration.from_seconds(30),
            backoff_rate=2,
            jitter_strategy=JitterStrategy.NONE,
            retryable_error_types=[PaymentProviderBusy],
        )
    )
)
# The warehouse has three days to pick the order. JsonSerDes turns the callback's result (the JSON text its
# sender sent) into a value; without a serdes the SDK hands the workflow the text as it came.
PICKING = WaitForCallbackConfig(timeout=Duration.from_days(3), serdes=JsonSerDes())


# --- the outside world: each call runs inside a step, so a replay reads its result from the log ---
def charge_card(order: dict[str, Any]) -> dict[str, Any]:
    """The payment provider. This example's stand-in approves every charge; the tests replace it."""
    return {"charge_id": f"ch-{order['order_id']}", "amount_cents": order["amount_cents"]}


def request_picking(order: dict[str, Any], callback_id: str) -> None:
    """Hands the warehouse the order and the callback id it answers with. This example's stand-in logs
    them (the worker's log); the warehouse of the tests reads the id from the execution's history."""
    logger.info("picking requested for order %s: answer callback %s", order["order_id"], callback_id)


def book_courier(order: dict[str, Any], picking: dict[str, Any]) -> str:
    return f"TRK-{order['order_id']}-{picking['parcel_id']}"


def refund(charge: dict[str, Any]) -> str:
    return f"rf-{charge['charge_id']}"


# --- the workflow ---
@workflow(WORKFLOW)
@durable_execution
def process_order(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    order = dict(event)
    charge = context.step(lambda _: charge_card(order), name="charge-card", config=CHARGE)
    try:
        picking = context.wait_for_callback(
            lambda callback_id, _: request_picking(order, callback_id), name="warehouse-pick", config=PICKING
        )
    except CallbackTimeoutError:
        refund_id = context.step(lambda _: refund(charge), name="refund")
        return {"order_id": order["order_id"], "status": "refunded", "refund_id": refund_id}
    tracking = context.step(lambda _: book_courier(order, picking), name="ship")
    return {
        "order_id": order["order_id"],
        "status": "shipped",
        "charge_id": charge["charge_id"],
        "picked_by": picking["picked_by"],
        "tracking": tracking,
    }
