"""The bus events the client sends and the worker's entry receives (a callback's completion on the bus)."""

from __future__ import annotations

import json
from typing import Any

from stepwell.errors import InvalidArgument

# Callback commands on the bus: the bus rule delivers them to the work queue (see stepwell.wiring.entry).
CALLBACK_SUCCESS = "stepwell.callback.success"
CALLBACK_FAILURE = "stepwell.callback.failure"
CALLBACK_HEARTBEAT = "stepwell.callback.heartbeat"
CALLBACK_DETAIL_TYPES = {
    "success": CALLBACK_SUCCESS,
    "fail": CALLBACK_FAILURE,
    "heartbeat": CALLBACK_HEARTBEAT,
}
CALLBACK_EVENT_SOURCE = "stepwell.client"


def callback_result_text(result: Any) -> str | None:
    """A callback result as the text the handler receives: str and bytes as they are, else JSON."""
    if result is None or isinstance(result, str):
        return result
    if isinstance(result, bytes):
        try:
            return result.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidArgument(f"callback result must be UTF-8 text: {error}") from None
    try:
        return json.dumps(result, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as error:
        raise InvalidArgument(
            f"callback result is not JSON-serializable (nor are NaN and Infinity, nor values nested too "
            f"deeply): {error}"
        ) from error


def reject_json_constant(name: str) -> Any:
    """json.loads's parse_constant: NaN and Infinity, which Python's json accepts, are not JSON."""
    raise ValueError(f"{name} is not JSON (numbers must be finite)")
