"""A plain Lambda function (no durable execution): workflows call it with `context.invoke` by its ARN.

examples/complete deploys it as `{name}-greeter` and lists its ARN in `invoke_function_arns`, so the
worker may invoke it. Its return value becomes the invoke's result; an exception it raises becomes the
invoke's error (ErrorType = the exception's class name), as Lambda reports a function error.
"""

from __future__ import annotations

from typing import Any


class GreetingRefused(Exception):
    """The event names nobody to greet."""


def handler(event: Any, context: Any) -> dict[str, Any]:
    name = event.get("name") if isinstance(event, dict) else None
    if not isinstance(name, str) or not name:
        raise GreetingRefused(f"no name to greet: the event needs a non-empty string 'name', got {event!r}")
    # "echo" comes back unchanged, so a caller can send (and receive) a large payload.
    return {"greeting": f"Hello, {name}!", "version": context.function_version, "echo": event.get("echo")}
