"""The definitions pages: a domain's definitions, one drawn as a graph, and a subject's contexts with the
state of each node (on the definitions harness: memory stores, virtual clock)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from definitions.harness import DOMAIN, Harness
from stepwell.console.app import create_app
from stepwell.features.definitions.service import DefinitionsService

from .conftest import ACCESS_TOKEN, Console, signed_in

ORDERS_DEFINITION = Path(__file__).resolve().parents[2] / "examples" / "definitions" / "orders.json"


def test_definitions_are_listed_drawn_and_coloured_by_a_subjects_context(console: Console) -> None:
    harness = Harness()
    for action in (
        "orders.create_invoice",
        "orders.request_shipment",
        "orders.escalate",
        "orders.notify_customer",
    ):
        harness.recording_action(action, result={"ok": True})
    harness.put(json.loads(ORDERS_DEFINITION.read_text()))
    harness.send("order.paid", "o-1", {"amount": 50, "address": "<b>here</b>"})
    service = DefinitionsService(harness.local.engine, harness.runtime, harness.router)
    http = signed_in(
        create_app(console.client, access_token=ACCESS_TOKEN, csrf_token="t", definitions=lambda: service)
    )

    listing = http.get("/definitions", query_string={"domain": DOMAIN}).get_data(as_text=True)
    assert "order-fulfilment" in listing
    empty = http.get("/definitions", query_string={"domain": "nobody"}).get_data(as_text=True)
    assert "No definitions in domain nobody" in empty

    page = http.get("/definition", query_string={"domain": DOMAIN, "id": "order-fulfilment"}).get_data(
        as_text=True
    )
    nodes = re.findall(r'data-node="([^"]+)" data-state="([a-z]+)"', page)
    assert {node for node, _ in nodes} == {
        "paid",
        "fan_out",
        "invoice",
        "request_shipment",
        "await_shipped",
        "escalate",
        "join",
        "big_order",
        "thank_vip",
        "notify",
        "done",
    }
    assert {state for _, state in nodes} == {"pending"}

    contexts = http.get(
        "/definition", query_string={"domain": DOMAIN, "id": "order-fulfilment", "subject": "o-1"}
    ).get_data(as_text=True)
    states = dict(re.findall(r'data-node="([^"]+)" data-state="([a-z]+)"', contexts))
    assert states["invoice"] == "succeeded" and states["request_shipment"] == "succeeded"
    assert states["await_shipped"] == "waiting" and states["notify"] == "pending"
    assert 'data-status="RUNNING"' in contexts

    missing = http.get("/definition", query_string={"domain": DOMAIN, "id": "nope"})
    assert missing.status_code == 400 and "no definition &#39;nope&#39;" in missing.get_data(as_text=True)
    assert http.get("/definition", query_string={"domain": DOMAIN}).status_code == 400
