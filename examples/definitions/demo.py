"""Run the definition examples on the local backend (in-process engine, virtual clock): `make demo`.

Several users sign up and activate at different times; the onboarding journey sends tips after a day and
a reminder to those still not activated after three days. Then two orders go through the fan-out/fan-in
DAG. Prints what each context did, and the Mermaid graph of each definition.

    python examples/definitions/demo.py [--graphs]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import onboarding_actions  # noqa: E402
import orders_actions  # noqa: E402
from stepwell.core.registry import Registry  # noqa: E402
from stepwell.features.definitions.actions import ActionRegistry  # noqa: E402
from stepwell.features.definitions.interpreter import register_interpreter  # noqa: E402
from stepwell.features.definitions.mermaid import to_mermaid  # noqa: E402
from stepwell.features.definitions.router import EventSources, PathExtractor, Router  # noqa: E402
from stepwell.features.definitions.runtime import DefinitionsRuntime  # noqa: E402
from stepwell.features.definitions.validation import parse_definition  # noqa: E402
from stepwell.testing.local import LocalStepwell  # noqa: E402

DOMAIN = "acme"
HOUR = 3600
DAY = 86400
# (user, seconds after sign-up when `user.activated` arrives, or None)
USERS: list[tuple[str, int | None]] = [
    ("alice", 2 * HOUR),
    ("bob", 2 * DAY),
    ("carol", None),
    ("dave", 3 * DAY + HOUR),
]


class Demo:
    def __init__(self) -> None:
        self.local = LocalStepwell(registry=Registry())
        actions = ActionRegistry(builtins=False)
        onboarding_actions.register(actions)
        orders_actions.register(actions)
        self.runtime = DefinitionsRuntime.in_memory(clock=self.local.clock, actions=actions)
        register_interpreter(self.local.registry, self.runtime)
        # As the module's event_sources would: the demo's producer speaks for the demo tenant only.
        sources = EventSources({"demo": [DOMAIN]})
        self.router = Router(self.local.engine, self.runtime, extractor=PathExtractor(), sources=sources)
        self.counter = 0
        self.t0 = self.local.clock.now()

    def load(self, name: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads((HERE / name).read_text())
        self.runtime.definitions.set_workflow(DOMAIN, document)
        return document

    def send(self, name: str, subject: str, data: Any = None) -> None:
        self.counter += 1
        event = {
            "version": "0",
            "id": f"demo-{self.counter}",
            "detail-type": name,
            "source": "demo",
            "detail": {"domain": DOMAIN, "subjectId": subject, "data": data or {}},
        }
        outcome = self.router.process_event(event)
        counts = f"started={len(outcome.started)} resumed={len(outcome.resumed)}"
        print(f"[{self.clock()}] {name:<16} {subject:<8} {counts}")
        self.local.run_until_idle()

    def clock(self) -> str:
        elapsed = self.local.clock.now() - self.t0
        return f"day {int(elapsed // DAY)} {int(elapsed % DAY // HOUR):02d}h"

    def advance_to(self, offset: float) -> None:
        target = self.t0 + offset
        while True:
            self.local.run_until_idle()
            due = self.local.queue.next_due_at()
            if due is None or due > target:
                break
            self.local.clock.advance_to(due)
        self.local.clock.advance_to(target)
        self.local.run_until_idle()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", action="store_true", help="print each definition as Mermaid")
    args = parser.parse_args(argv)
    demo = Demo()
    onboarding = demo.load("onboarding.json")
    orders = demo.load("orders.json")
    if args.graphs:
        for document in (onboarding, orders):
            print(to_mermaid(parse_definition(document)))

    print("== onboarding journey")
    for user, _ in USERS:
        demo.send("user.signed_up", user, {"email": f"{user}@example.com", "name": user.title()})
    events = sorted((at, user) for user, at in USERS if at is not None)
    for at, user in events:
        demo.advance_to(at)
        demo.send("user.activated", user)
    demo.advance_to(5 * DAY)
    for user, _ in USERS:
        (context,) = demo.runtime.contexts.get_contexts(DOMAIN, "onboarding", user)
        emails = [m["template"] for m in onboarding_actions.OUTBOX if m["user"] == user]
        print(f"  {user:<6} {context.status:<10} emails: {', '.join(emails) or 'none'}")

    print("== order DAG")
    demo.send("order.paid", "o-100", {"amount": 40, "address": "1 Main St"})
    demo.send("order.paid", "o-200", {"amount": 2500, "address": "2 High St"})
    demo.advance_to(6 * DAY)
    demo.send("order.shipped", "o-100")
    demo.advance_to(12 * DAY)
    for order in ("o-100", "o-200"):
        (context,) = demo.runtime.contexts.get_contexts(DOMAIN, "order-fulfilment", order)
        calls = [name for name, inputs in orders_actions.LOG if inputs.get("order") == order]
        print(f"  {order:<6} {context.status:<10} {' -> '.join(calls)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
