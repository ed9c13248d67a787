"""How the DynamoDB store writes and reads attribute values (short names, numbers without a fraction when
whole) and the helpers every concern of it shares."""

from __future__ import annotations

import time
from typing import Any, Literal

Item = dict[str, Any]

_CAPACITY: Literal["TOTAL"] = "TOTAL"


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: float) -> dict[str, str]:
    # Whole numbers without a fraction keep items short; DynamoDB compares N numerically either way.
    return {"N": str(int(value)) if float(value).is_integer() else repr(float(value))}


def _str(item: Item, name: str) -> str | None:
    value = item.get(name)
    return None if value is None else str(value["S"])


def _num(item: Item, name: str) -> float | None:
    value = item.get(name)
    return None if value is None else float(value["N"])


def _flag(item: Item, name: str) -> bool:
    value = item.get(name)
    return bool(value and value.get("BOOL"))


def _item_id(item: Item) -> tuple[str, str]:
    """An execution item's (or key's) table key as a hashable pair."""
    return _str(item, "contextKey") or "", _str(item, "instanceId") or ""


def _back_off(attempt: int) -> None:
    """Wait before asking again for what a batch request left unprocessed (throttled)."""
    time.sleep(min(0.05 * 2**attempt, 2.0))
