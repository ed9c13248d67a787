"""Actions of the onboarding journey (onboarding.json).

`onboarding.send_email` asks the mail service for an email by putting an `email.requested` event on the
bus (STEPWELL_EVENT_BUS_NAME); without a bus (local runs, tests) it keeps the message in OUTBOX. Import this
module from the worker (list it in `workflow_modules`) so the action is registered.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from stepwell.features.definitions.actions import (
    ActionContext,
    ActionRegistry,
    PermanentActionError,
    default_actions,
    put_event,
)

logger = logging.getLogger("examples.onboarding")
TEMPLATES = {"tips": "Three tips to get started, {name}", "reminder": "{name}, your account is waiting"}
OUTBOX: list[dict[str, Any]] = []


def send_email(inputs: dict[str, Any], context: ActionContext) -> dict[str, Any]:
    to, template = inputs.get("to"), inputs.get("template")
    if not isinstance(to, str) or "@" not in to:
        raise PermanentActionError(f"onboarding.send_email: 'to' must be an email address, got {to!r}")
    if template not in TEMPLATES:
        raise PermanentActionError(
            f"onboarding.send_email: unknown template {template!r} (known: {sorted(TEMPLATES)})"
        )
    message = {
        "to": to,
        "template": template,
        "subject": TEMPLATES[template].format(name=inputs.get("name") or "there"),
        "user": context.subject_id,
        "tenant": context.domain,
    }
    if context.event_bus_name:
        put_event({"detailType": "email.requested", "detail": message}, context)
    else:
        OUTBOX.append(message)
    logger.info("email requested: %s", json.dumps(message))
    return {"template": template, "to": to}


def register(registry: ActionRegistry) -> None:
    registry.register("onboarding.send_email", send_email)


register(default_actions)
