"""The SDK's own operations (a wait_for_callback's callback and submitter step) are folded into their
wait_for_callback in the console's timeline and `stepwell history`'s text, unless asked for."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from stepwell import cli
from stepwell.console import timeline
from stepwell.core.history import format_timeline
from stepwell.core.sdk_operations import fold_internal, internal_operations

from console.conftest import Console

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _event(seconds: float, event_type: str, **fields: Any) -> dict[str, Any]:
    details = fields.pop("details", {})
    return {"EventType": event_type, "EventTimestamp": T0 + timedelta(seconds=seconds), **fields} | {
        f"{event_type}Details": details
    }


def _approval(seconds: float, context: str, name: str | None) -> list[dict[str, Any]]:
    """What `context.wait_for_callback(submit, name=name)` records (named ones only when `name`)."""
    prefix = f"{name} " if name else ""
    named = {"Name": name} if name else {}
    return [
        _event(seconds, "ContextStarted", Id=context, SubType="WaitForCallback", **named),
        _event(
            seconds,
            "CallbackStarted",
            Id=f"{context}-cb",
            Name=f"{prefix}create callback id",
            SubType="Callback",
            ParentId=context,
            details={"CallbackId": f"id-of-{context}"},
        ),
        _event(
            seconds,
            "StepStarted",
            Id=f"{context}-s",
            Name=f"{prefix}submitter",
            SubType="Step",
            ParentId=context,
        ),
        _event(
            seconds,
            "StepSucceeded",
            Id=f"{context}-s",
            Name=f"{prefix}submitter",
            SubType="Step",
            ParentId=context,
        ),
    ]


def _story() -> list[dict[str, Any]]:
    """A named and an unnamed wait_for_callback, then a context that claims the subtype for a step of its
    own (ChildConfig(sub_type="WaitForCallback")): that step is the user's, not the SDK's."""
    return [
        _event(0, "ExecutionStarted"),
        *_approval(1, "a", "approval"),
        _event(
            5,
            "CallbackSucceeded",
            Id="a-cb",
            Name="approval create callback id",
            SubType="Callback",
            ParentId="a",
        ),
        _event(5, "ContextSucceeded", Id="a", Name="approval", SubType="WaitForCallback"),
        *_approval(6, "b", None),
        _event(7, "ContextStarted", Id="l", Name="lookalike", SubType="WaitForCallback"),
        _event(7, "StepStarted", Id="l-s", Name="lookup", SubType="Step", ParentId="l"),
    ]


def test_only_the_operations_the_sdk_names_inside_a_wait_for_callback_are_internal() -> None:
    assert internal_operations(_story()) == {"a-cb": "a", "a-s": "a", "b-cb": "b", "b-s": "b"}


def test_the_timeline_folds_them_into_their_wait_for_callback_unless_asked() -> None:
    now = T0 + timedelta(seconds=10)
    folded = timeline.build_rows(_story(), now)
    assert [row.label for row in folded] == [
        "execution",
        "invocations",
        "approval",
        "WaitForCallback",
        "lookalike",
        "lookup",
    ]
    by_key = {row.key: row for row in folded}
    assert [segment.state for segment in by_key["a"].segments] == ["succeeded"]
    assert [segment.state for segment in by_key["b"].segments] == ["waiting"]  # its callback is open
    everything = timeline.build_rows(_story(), now, show_internal=True)
    assert [row.label for row in everything][2:5] == [
        "approval",
        "approval create callback id",
        "approval submitter",
    ]
    assert len(everything) == len(folded) + 4
    assert timeline.open_callbacks(_story()) == [("id-of-b", "create callback id")]  # the forms still know it


def test_the_history_text_shows_each_callback_as_its_wait_for_callback() -> None:
    folded = fold_internal(_story())
    lines = format_timeline(folded).splitlines()
    assert not any("submitter" in line or "create callback id" in line for line in lines)
    started = [line for line in lines if "CallbackStarted" in line]
    assert (
        len(started) == 2
        and "approval  (callback id-of-a)" in started[0]
        and "(callback id-of-b)" in started[1]
    )
    assert [line.split()[-1] for line in lines if "CallbackSucceeded" in line] == ["approval"]
    assert any("lookup" in line for line in lines)
    assert len(format_timeline(_story()).splitlines()) == len(_story())  # unfolded: every event


def test_stepwell_history_folds_them_unless_given_all(console: Console, tmp_path: Path) -> None:
    execution_id = console.client.start_execution("order-story", {}, execution_name="folded")
    callback_id = console.run_until_callback(execution_id)
    config_file = tmp_path / "client_config.json"
    config_file.write_text(json.dumps(console.deployment.config.to_client_config()))

    def history(*options: str) -> str:
        out, err = io.StringIO(), io.StringIO()
        assert (
            cli.main(["--config", str(config_file), "history", execution_id, *options], out=out, err=err) == 0
        )
        return out.getvalue()

    folded, everything = history(), history("--all")
    assert "approval submitter" not in folded and "create callback id" not in folded
    assert f"CallbackStarted        approval  (callback {callback_id})" in folded
    assert "StepSucceeded          approval submitter" in everything
    assert f"approval create callback id  (callback {callback_id})" in everything
    assert len(json.loads(history("--json"))) == len(everything.splitlines())
