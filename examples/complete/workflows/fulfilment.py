"""The order story that `make demo` runs: workflow code packaged with the worker (examples/complete passes
this folder as `workflows_dir`, and the worker imports `workflows.fulfilment` at start).

An order is reserved with a flaky payment provider (the first attempt fails, the retry succeeds), waits
three days for the cooling-off period, waits for a manager's approval sent through a callback, then
fans out to invoicing, shipping and notification in parallel. releases/v2/fulfilment.py is the next
release of this file.
"""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.core.registry import workflow
from workflows.order_steps import APPROVAL, COOLING_OFF, FLAKY_RETRY, charge, fulfil_in_parallel


@workflow("orders.fulfil")
@durable_execution
def fulfil_order(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    order = dict(event)
    payment = context.step(lambda step: charge(order, step), name="charge-payment", config=FLAKY_RETRY)

    # Cooling-off period: the customer may still cancel. Stepwell parks the execution on a one-time
    # EventBridge Scheduler schedule; the demo's scheduler fast-forwards it.
    context.wait(COOLING_OFF, name="cooling-off")

    approval = context.wait_for_callback(
        lambda callback_id, _ctx: None,  # the approver reads the callback id from the execution's history
        name="manager-approval",
        config=APPROVAL,
    )
    invoice, shipment, notification = fulfil_in_parallel(context, order)
    return {
        "order_id": order["order_id"],
        "charge": payment,
        "approval": approval,
        "invoice": invoice,
        "shipment": shipment,
        "notification": notification,
    }
