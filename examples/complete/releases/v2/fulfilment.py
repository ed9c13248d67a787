"""Release 2 of workflows/fulfilment.py, which `make demo` deploys while orders of release 1 wait.

It screens each order for fraud before the cooling-off period. An order that started on release 1 has
logged the payment and then the wait: replayed by this code, its log would disagree at the new step.
Stepwell keeps such orders on the version of the worker they started on, and runs new orders here.
"""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.core.registry import workflow
from workflows.order_steps import APPROVAL, COOLING_OFF, FLAKY_RETRY, charge, fulfil_in_parallel, total_cents

# Orders above this total are held for review in the fraud screening step.
REVIEW_ABOVE_CENTS = 50_000


@workflow("orders.fulfil")
@durable_execution
def fulfil_order(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    order = dict(event)
    payment = context.step(lambda step: charge(order, step), name="charge-payment", config=FLAKY_RETRY)
    screening = context.step(
        lambda _: "review" if total_cents(order) > REVIEW_ABOVE_CENTS else "clear", name="screen-fraud"
    )
    context.wait(COOLING_OFF, name="cooling-off")

    approval = context.wait_for_callback(
        lambda callback_id, _ctx: None, name="manager-approval", config=APPROVAL
    )
    invoice, shipment, notification = fulfil_in_parallel(context, order)
    return {
        "order_id": order["order_id"],
        "release": 2,
        "charge": payment,
        "fraud_screening": screening,
        "approval": approval,
        "invoice": invoice,
        "shipment": shipment,
        "notification": notification,
    }
