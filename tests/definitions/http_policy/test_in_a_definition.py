"""The action in a definition: its answer reaches the context's data, a refused URL fails the context at
once (not retried), and a hostile answer fails it with nothing of the answer stored."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest
from stepwell.features.definitions.actions import HTTP, ActionContext, http_request

from ..harness import Harness
from ..test_nodes import graph
from .support import Server, allow


def test_a_definition_gets_the_answer_or_fails_at_once_naming_the_rule(
    monkeypatch: pytest.MonkeyPatch, server: Server, harness: Harness
) -> None:
    allow(monkeypatch, [f"127.0.0.1:{server.port}", "169.254.169.254"], ["127.0.0.0/8"])
    attempts: list[str] = []

    def counted(inputs: dict[str, Any], ctx: ActionContext) -> Any:
        attempts.append(inputs["url"])
        return http_request(inputs, ctx)

    harness.actions.register(HTTP, counted)
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "go"},
                {
                    "id": "call",
                    "type": "action",
                    "action": HTTP,
                    "input": {"url": "data.url"},
                    "output": "answer",
                    "retry": {"maxAttempts": 3, "initialDelay": "1s"},
                },
                {"id": "e", "type": "end"},
            ],
            [("t", "call"), ("call", "e")],
        )
    )
    harness.send("go", "allowed", {"url": f"{server.url}/ok"})
    metadata = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
    harness.send("go", "metadata", {"url": metadata})
    harness.run_all()

    allowed = harness.context("wf", "allowed")
    assert allowed.status == "SUCCEEDED" and harness.status(allowed) == "SUCCEEDED"
    assert allowed.data["answer"]["status"] == 200 and allowed.data["answer"]["body"]["path"] == "/ok"
    failed = harness.context("wf", "metadata")
    assert failed.status == "FAILED" and harness.status(failed) == "FAILED"
    assert metadata in json.dumps(failed.error) and "169.254.169.254, a link-local" in json.dumps(
        failed.error
    )
    assert attempts == [f"{server.url}/ok", metadata]  # the refusal is not retried
    assert [path for _, path, _ in server.requests] == ["/ok"]


def test_a_hostile_answer_fails_its_context_and_nothing_of_it_is_stored(
    monkeypatch: pytest.MonkeyPatch, server: Server, harness: Harness
) -> None:
    """The probe found 6 MB of headers, and 1e999 and NaN, in context data and step results. 95 headers of
    1,000 bytes pass the head's 64 KiB; before the bound they were stored, as the numbers were."""
    allow(monkeypatch, [f"127.0.0.1:{server.port}"], ["127.0.0.0/8"])
    harness.actions.register(HTTP, http_request)
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "go"},
                {
                    "id": "call",
                    "type": "action",
                    "action": HTTP,
                    "input": {"url": "data.url", "maxResponseBytes": 100},
                    "output": "answer",
                    "retry": {"maxAttempts": 3, "initialDelay": "1s"},
                },
                {"id": "e", "type": "end"},
            ],
            [("t", "call"), ("call", "e")],
        )
    )
    nan = urlencode({"body": '{"big":1e999,"nan":NaN}'})
    harness.send("go", "headers", {"url": f"{server.url}/head?count=95&size=1000"})
    harness.send("go", "nan", {"url": f"{server.url}/raw?{nan}"})
    harness.run_all()

    for subject, named in (("headers", "larger than 65536 bytes"), ("nan", "holds 1e999")):
        failed = harness.context("wf", subject)
        assert failed.status == "FAILED" and harness.status(failed) == "FAILED"
        assert named in json.dumps(failed.error)
        assert "answer" not in failed.data
        history = harness.local.history(failed.execution_id)
        stored = json.dumps([failed.data, failed.error, history], allow_nan=False, default=str)
        assert len(stored) < 20_000 and "h" * 1000 not in stored
    assert len(server.requests) == 2  # a refused answer is not asked for again
