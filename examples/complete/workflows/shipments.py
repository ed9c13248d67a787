"""Flow control: booking shipments with carriers whose APIs take only so much (packaged with the worker;
the worker imports `workflows.shipments` at start).

Each carrier gets at most two bookings in progress at once and at most ten new ones a minute; other
carriers are not held up by a busy one. A booking waits for the carrier's confirmation through a callback
(the carrier calls back, e.g. through the callback URL), so a slot is held until the carrier answered.
`stepwell flow shipments.book --key <carrier>` shows the bookings running and waiting.
"""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, WaitForCallbackConfig
from aws_durable_execution_sdk_python.serdes import JsonSerDes
from stepwell.core.flow_limits import Concurrency, Rate
from stepwell.core.registry import workflow

# The carrier's confirmation is JSON text: the serdes hands the workflow its value.
CONFIRMATION = WaitForCallbackConfig(timeout=Duration.from_days(2), serdes=JsonSerDes())


@workflow(
    "shipments.book",
    concurrency=Concurrency(2, key="$.carrier"),
    rate=Rate(10, period=60, key="$.carrier"),
)
@durable_execution
def book_shipment(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    booking = context.step(
        lambda _: {"carrier": event["carrier"], "parcel": event["parcel"]}, name="request-booking"
    )
    confirmation = context.wait_for_callback(
        lambda callback_id, _ctx: None,  # the carrier is told the callback id (or its URL) with the request
        name="carrier-confirmation",
        config=CONFIRMATION,
    )
    return {
        **booking,
        "confirmation": confirmation,
    }
