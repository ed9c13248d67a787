"""The order workflow in-process (docs/testing-your-workflows.md): the `stepwell_local` fixture runs the
engine over an in-memory store on a virtual clock, so three days of waiting for the warehouse take no real
time."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import orders
import pytest
from stepwell.model import ExecutionStatus
from stepwell.testing.local import LocalStepwell

ORDER = {"order_id": "A-1001", "amount_cents": 4900}
PICKED = {"parcel_id": "P-7", "picked_by": "bay-7"}
THREE_DAYS = timedelta(days=3).total_seconds()


@pytest.fixture
def shop(stepwell_local: LocalStepwell) -> LocalStepwell:
    stepwell_local.register(orders.WORKFLOW, orders.process_order)
    return stepwell_local


def warehouse_answers(execution_id: str, result: dict[str, Any]) -> Callable[[LocalStepwell], bool]:
    """For run_to_completion's on_idle: once the execution waits for the warehouse, answer with `result`."""

    def answer(local: LocalStepwell) -> bool:
        try:
            callback_id = local.callback_id(execution_id, "warehouse-pick")
        except LookupError:  # not waiting for it (yet): let the clock move on
            return False
        local.engine.send_callback_success(callback_id, json.dumps(result))
        return True

    return answer


def test_a_picked_order_ships(shop: LocalStepwell) -> None:
    execution_id = shop.start(orders.WORKFLOW, ORDER)
    shop.run_until_idle()  # the card is charged; nothing else is due: it waits for the warehouse
    assert shop.describe(execution_id)["Status"] == "RUNNING"

    callback_id = shop.callback_id(execution_id, "warehouse-pick")
    shop.engine.send_callback_success(callback_id, json.dumps(PICKED))
    record = shop.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(record.result or "null") == {
        "order_id": "A-1001",
        "status": "shipped",
        "charge_id": "ch-A-1001",
        "picked_by": "bay-7",  # the callback's result reached the workflow as a dict (JsonSerDes)
        "tracking": "TRK-A-1001-P-7",
    }


def test_an_order_the_warehouse_never_picks_is_refunded_after_three_days(shop: LocalStepwell) -> None:
    started = shop.clock.now()
    execution_id = shop.start(orders.WORKFLOW, ORDER)
    record = shop.run_to_completion(execution_id)  # nobody answers: the clock skips to the timeout

    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(record.result or "null") == {
        "order_id": "A-1001",
        "status": "refunded",
        "refund_id": "rf-ch-A-1001",
    }
    assert THREE_DAYS <= shop.clock.now() - started < THREE_DAYS + 60
    assert "CallbackTimedOut" in [event["EventType"] for event in shop.history(execution_id)]


def test_a_busy_payment_provider_is_retried_after_30_then_60_seconds(
    shop: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts: list[float] = []

    def busy_twice(order: dict[str, Any]) -> dict[str, Any]:
        attempts.append(shop.clock.now())
        if len(attempts) < 3:
            raise orders.PaymentProviderBusy("try again later")
        return {"charge_id": "ch-retried", "amount_cents": order["amount_cents"]}

    monkeypatch.setattr(orders, "charge_card", busy_twice)
    execution_id = shop.start(orders.WORKFLOW, ORDER)

    shop.run_until_idle()  # the first attempt failed: the retry is 30 s away, the warehouse not asked yet
    assert len(attempts) == 1
    with pytest.raises(LookupError):
        shop.callback_id(execution_id, "warehouse-pick")

    record = shop.run_to_completion(execution_id, on_idle=warehouse_answers(execution_id, PICKED))

    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(record.result or "null")["charge_id"] == "ch-retried"
    assert [round(later - earlier) for earlier, later in itertools.pairwise(attempts)] == [
        30,
        60,
    ]
    failures = [event for event in shop.history(execution_id) if event["EventType"] == "StepFailed"]
    assert [event["StepFailedDetails"]["RetryDetails"]["NextAttemptDelaySeconds"] for event in failures] == [
        30,
        60,
    ]


def test_a_declined_card_is_not_retried_and_fails_the_order(
    shop: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []

    def declined(order: dict[str, Any]) -> dict[str, Any]:
        calls.append(order)
        raise ValueError(f"card declined for order {order['order_id']}")

    monkeypatch.setattr(orders, "charge_card", declined)
    execution_id = shop.start(orders.WORKFLOW, ORDER)
    record = shop.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.FAILED
    assert len(calls) == 1  # only PaymentProviderBusy is retryable
    assert "card declined for order A-1001" in shop.describe(execution_id)["Error"]["ErrorMessage"]
