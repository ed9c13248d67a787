"""Every validation error names the node or edge it concerns."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from stepwell.features.definitions import SCHEMA_PATH
from stepwell.features.definitions.model import (
    DEFINITION_ITEM_OVERHEAD,
    MAX_DEFINITION_BYTES,
    DefinitionInvalid,
    encode_definition,
    parse_duration,
    parse_instant,
)
from stepwell.features.definitions.store import MAX_ID_LENGTH, DynamoDbDefinitionStore
from stepwell.features.definitions.store.dynamodb_definitions import VERSIONS_SUFFIX
from stepwell.features.definitions.validation import (
    parse_definition,
    parse_storable_definition,
    unregistered_actions,
    validate_definition,
)

from .test_store import create_tables


def base() -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "id": "journey",
        "nodes": [
            {"id": "start", "type": "trigger", "event": "signed_up", "filter": "data.plan == 'pro'"},
            {"id": "greet", "type": "action", "action": "send", "input": {"to": "data.email"}},
            {"id": "check", "type": "condition", "expression": "data.age > 18"},
            {"id": "pause", "type": "wait", "duration": "1d"},
            {"id": "act", "type": "trigger_or_timeout", "event": "activated", "timeout": "3d"},
            {"id": "fan", "type": "parallel"},
            {"id": "a", "type": "action", "action": "send"},
            {"id": "b", "type": "wait", "duration": 60},
            {"id": "both", "type": "join", "mode": "all"},
            {"id": "done", "type": "end"},
        ],
        "edges": [
            {"from": "start", "to": "greet"},
            {"from": "greet", "to": "check"},
            {"from": "check", "to": "pause", "branch": "true"},
            {"from": "check", "to": "done", "branch": "false"},
            {"from": "pause", "to": "act"},
            {"from": "act", "to": "fan", "branch": "event"},
            {"from": "act", "to": "done", "branch": "timeout"},
            {"from": "fan", "to": "a"},
            {"from": "fan", "to": "b"},
            {"from": "a", "to": "both"},
            {"from": "b", "to": "both"},
            {"from": "both", "to": "done"},
        ],
    }


def errors_of(document: dict[str, Any], actions: list[str] | None = None) -> list[str]:
    found = validate_definition(document, actions)
    assert found, "expected the definition to be invalid"
    return found


def node(document: dict[str, Any], node_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(n for n in document["nodes"] if n["id"] == node_id)
    return found


def test_base_is_valid() -> None:
    definition = parse_definition(base(), actions=["send"])
    assert definition.joins == {"fan": "both"}
    assert [t.id for t in definition.triggers()] == ["start"]


def test_unknown_type() -> None:
    document = base()
    node(document, "pause")["type"] = "sleep"
    assert any(
        "node 'pause': unknown type 'sleep' (allowed: trigger, action" in e for e in errors_of(document)
    )


def test_dangling_edge() -> None:
    document = base()
    document["edges"].append({"from": "done", "to": "ghost"})
    assert any(
        "edge #12 (done -> ghost): dangling edge: 'to' names no node ('ghost')" in e
        for e in errors_of(document)
    )


def test_unreachable_node() -> None:
    document = base()
    document["nodes"].append({"id": "orphan", "type": "end"})
    assert "node 'orphan': unreachable from any trigger" in errors_of(document)


def test_missing_branch() -> None:
    document = base()
    document["edges"] = [
        e for e in document["edges"] if not (e["from"] == "act" and e["branch"] == "timeout")
    ]
    assert "node 'act' (trigger_or_timeout): missing branch 'timeout'" in errors_of(document)
    document = base()
    document["edges"] = [
        e for e in document["edges"] if not (e["from"] == "check" and e["branch"] == "false")
    ]
    assert "node 'check' (condition): missing branch 'false'" in errors_of(document)


def test_unknown_branch_label() -> None:
    document = base()
    for edge in document["edges"]:
        if edge["from"] == "check" and edge["branch"] == "false":
            edge["branch"] = "maybe"
    found = errors_of(document)
    assert any(
        "branch 'maybe' is not allowed from node 'check' (condition) (allowed: true, false)" in e
        for e in found
    )


def test_cycle_with_no_wait() -> None:
    document = base()
    # greet -> check -(false)-> greet: a loop that never waits.
    for edge in document["edges"]:
        if edge["from"] == "check" and edge["branch"] == "false":
            edge["to"] = "greet"
    assert "cycle with no wait in it: greet -> check -> greet" in errors_of(document)


def test_cycle_through_a_wait_is_allowed() -> None:
    document = base()
    for edge in document["edges"]:
        if edge["from"] == "act" and edge["branch"] == "timeout":
            edge["to"] = "greet"  # remind again after every timeout
    parse_definition(document)


def test_bad_duration() -> None:
    document = base()
    node(document, "pause")["duration"] = "tomorrow"
    assert any("node 'pause' (wait): duration: bad duration 'tomorrow'" in e for e in errors_of(document))
    document = base()
    node(document, "act")["timeout"] = -5
    assert any("node 'act' (trigger_or_timeout): timeout: bad duration -5" in e for e in errors_of(document))


def test_a_constant_until_more_than_366_days_ahead_is_refused_when_stored() -> None:
    """Such a wait would fail every context reaching it for a year at least; stored definitions already
    holding one still parse where contexts run (the wait only comes nearer)."""
    document = base()
    node(document, "pause").pop("duration")
    node(document, "pause")["until"] = "'2100-01-01T00:00:00Z'"
    assert validate_definition(document) == [
        "node 'pause' (wait): 'until' \"'2100-01-01T00:00:00Z'\" is more than 366 days ahead; "
        "a wait lasts at most 366 days"
    ]
    parse_definition(document)
    stored_at = parse_instant("2099-06-01T00:00:00Z")  # within 366 days of it: storable
    assert parse_storable_definition(document, now=stored_at).nodes["pause"].until is not None
    with pytest.raises(DefinitionInvalid, match="more than 366 days ahead"):
        parse_storable_definition(document, now=stored_at - 200 * 86400)


def test_a_constant_until_that_is_not_a_time_is_refused_when_stored() -> None:
    """An `until` that reads no data gives the same value on every run: one that is no time would fail
    every context reaching the node, so the definition is refused, naming the node, the value and the
    forms allowed. An `until` that reads data is checked when the node runs."""
    refused = {
        "'next tuesday'": "must give epoch seconds or an ISO 8601 time with a zone",
        "'2026-12-01T09:00:00'": "a time without a time zone",
        "true": "must give epoch seconds or an ISO 8601 time with a zone",
        "null": "must give epoch seconds or an ISO 8601 time with a zone",
    }
    for constant, problem in refused.items():
        document = base()
        node(document, "pause").pop("duration")
        node(document, "pause")["until"] = constant
        errors = errors_of(document)
        assert len(errors) == 1 and errors[0].startswith("node 'pause' (wait): 'until' "), (constant, errors)
        assert problem in errors[0], (constant, errors)
    for accepted in ("'2026-12-01T09:00:00Z'", "'2026-12-01T09:00:00+02:00'", "1796115600", "data.deadline"):
        document = base()
        node(document, "pause").pop("duration")
        node(document, "pause")["until"] = accepted
        assert validate_definition(document) == [], accepted


def test_bad_expression() -> None:
    document = base()
    node(document, "check")["expression"] = "data.age >> 3"
    assert any("node 'check' (condition): bad expression in 'expression'" in e for e in errors_of(document))
    document = base()
    node(document, "greet")["input"] = {"to": "open('/etc/passwd')"}
    assert any("node 'greet' (action): bad expression in 'input.to'" in e for e in errors_of(document))
    document = base()
    node(document, "start")["filter"] = "data.plan =="
    assert any("node 'start' (trigger): bad expression in 'filter'" in e for e in errors_of(document))


def test_unknown_action() -> None:
    found = errors_of(base(), actions=["other"])
    assert "node 'greet' (action): unknown action 'send' (registered: other)" in found
    assert "node 'a' (action): unknown action 'send' (registered: other)" in found


def test_parallel_needs_one_join() -> None:
    document = base()
    document["edges"] = [e for e in document["edges"] if e != {"from": "b", "to": "both"}]
    document["edges"].append({"from": "b", "to": "done"})
    found = errors_of(document)
    assert any(
        "node 'fan' (parallel): branch to 'b' reaches end node 'done' before a join" in e for e in found
    )


def test_join_n_more_than_branches() -> None:
    document = base()
    node(document, "both").update({"mode": "n", "n": 3})
    assert "node 'both' (join): n=3 but parallel 'fan' has 2 branches" in errors_of(document)


def test_shape_errors() -> None:
    document = base()
    document["schemaVersion"] = 2
    node(document, "pause")["until"] = "data.when"
    document["nodes"].append({"id": "start", "type": "end"})
    document["nodes"].append({"id": "bad id!", "type": "end"})
    node(document, "done")["colour"] = "red"
    found = errors_of(document)
    assert "schemaVersion must be 1, got 2" in found
    assert any("node 'pause' (wait): give exactly one of 'duration'" in e for e in found)
    assert "node 'start': duplicate node id" in found
    assert any("node #11: invalid id 'bad id!'" in e for e in found)
    assert any("node 'done' (end): unknown keys ['colour']" in e for e in found)
    with pytest.raises(DefinitionInvalid, match="must be a JSON object"):
        parse_definition([1, 2])


def test_trigger_rules() -> None:
    document = base()
    document["edges"].append({"from": "greet", "to": "start"})
    found = errors_of(document)
    assert any(
        "node 'start' (trigger): a trigger starts a context and cannot have incoming edges" in e
        for e in found
    )
    assert any("node 'greet' (action): has 2 outgoing edges" in e for e in found)
    document = base()
    document["nodes"][0] = {"id": "start", "type": "wait", "duration": "1h"}
    assert "the definition has no trigger node: nothing can start a context" in errors_of(document)


def test_durations() -> None:
    assert parse_duration("1d12h") == 129600
    assert parse_duration("P3D") == 259200
    assert parse_duration("PT1H30M") == 5400
    assert parse_duration(90) == 90
    assert parse_duration("500ms") == 0.5
    for bad in ("", "3 days", "P", "PT", True, None, 0, "400d"):
        with pytest.raises(ValueError, match=r"bad duration|at most 366 days"):
            parse_duration(bad)


def test_published_schema_matches_the_node_types() -> None:
    schema = json.loads(Path(SCHEMA_PATH).read_text())
    assert schema["properties"]["schemaVersion"] == {"const": 1}
    types = {variant["properties"]["type"]["const"] for variant in schema["$defs"]["node"]["oneOf"]}
    from stepwell.features.definitions.model import NODE_TYPES

    assert types == set(NODE_TYPES)
    # The repository's examples validate against the engine's rules.
    examples = Path(__file__).parents[2] / "examples" / "definitions"
    for path in sorted(examples.glob("*.json")):
        parse_definition(json.loads(path.read_text()))


def test_validation_does_not_change_the_document() -> None:
    document = base()
    before = copy.deepcopy(document)
    parse_definition(document)
    assert document == before


def padded(size: int) -> dict[str, Any]:
    """base() with a description that makes its stored JSON exactly `size` bytes."""
    document = base()
    document["description"] = ""
    document["description"] = "x" * (size - len(encode_definition(document)))
    assert len(encode_definition(document)) == size
    return document


def test_a_definition_too_large_for_its_item_is_refused_with_its_size_and_the_limit() -> None:
    assert validate_definition(padded(MAX_DEFINITION_BYTES)) == []
    found = errors_of(padded(MAX_DEFINITION_BYTES + 1))
    assert found == [
        f"the definition is {MAX_DEFINITION_BYTES + 1:,} bytes as stored (compact JSON); at most "
        f"{MAX_DEFINITION_BYTES:,} fit in its DynamoDB item (400,000 bytes, 1,024 of them kept for its keys "
        "and version attributes)"
    ]
    # Non-ASCII text is stored escaped: its size is what counts, not its length in characters.
    document = padded(MAX_DEFINITION_BYTES - 4)  # "\u00e9" takes six bytes where "x" took one
    document["description"] = document["description"][:-1] + "\u00e9"
    assert any("bytes as stored" in error for error in errors_of(document))


def test_the_largest_definition_fits_in_dynamodb_and_a_larger_item_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        db = boto3.client("dynamodb", region_name="us-east-1")
        create_tables(db)
        store = DynamoDbDefinitionStore(db, "sw-definitions")
        domain, workflow_id = "d" * MAX_ID_LENGTH, "w" * MAX_ID_LENGTH  # the longest keys
        largest = padded(MAX_DEFINITION_BYTES - len(encode_definition(workflow_id)) - len(',"id":'))
        largest["id"] = workflow_id
        assert len(encode_definition(largest)) <= MAX_DEFINITION_BYTES
        written = store.set_workflow(domain, largest)
        assert written.version == 1
        # Everything in the item but the definition's JSON: the longest keys, a six-digit version.
        version_item = store._item(domain + VERSIONS_SUFFIX, f"{workflow_id}#999999", written)
        overhead = sum(
            len(name) + len(next(iter(value.values())))
            for name, value in version_item.items()
            if name != "definition"
        )
        assert overhead + len("definition") + len(str(2**63)) * 3 <= DEFINITION_ITEM_OVERHEAD
        stored = store.get_workflow(domain, workflow_id, 1)
        assert stored is not None and stored.definition == largest
        # What validation refuses, DynamoDB refuses too (the check is not stricter than needed by much).
        unchecked = DynamoDbDefinitionStore(db, "sw-definitions", validator=lambda _: None)
        too_large = padded(410_000)  # above AWS's 409,600 bytes
        too_large["id"] = "big"
        with pytest.raises(ClientError, match="size"):
            unchecked.set_workflow("acme", too_large)
        with pytest.raises(DefinitionInvalid, match="bytes as stored"):
            store.set_workflow("acme", too_large)


def test_not_json_is_refused() -> None:
    document = base()
    node(document, "greet")["input"] = {"amount": float("nan")}
    assert any("not storable as JSON" in error for error in errors_of(document))


@pytest.mark.parametrize("value", [True, 1.0, "1"])
def test_schema_version_must_be_the_integer_1(value: Any) -> None:
    document = base()
    document["schemaVersion"] = value
    assert any("schemaVersion must be 1" in error for error in errors_of(document))


def test_a_huge_duration_is_a_clear_error() -> None:
    document = base()
    node(document, "pause")["duration"] = 10**400
    assert any("node 'pause' (wait): duration: bad duration" in error for error in errors_of(document))


def test_actions_not_registered_here_are_warnings_naming_node_and_action() -> None:
    assert unregistered_actions(base(), ["send"]) == []
    warnings = unregistered_actions(base(), ["stepwell.http"])
    assert warnings == [
        f"node {node_id!r} (action): action 'send' is not registered here (registered: stepwell.http); "
        "unless the deployed workflow code registers it, contexts fail at this node"
        for node_id in ("greet", "a")
    ]
    assert validate_definition(base()) == []  # without the registry, not an error
    assert unregistered_actions({"nodes": "not a list"}, []) == []


@pytest.mark.parametrize(
    ("workflow_id", "message"),
    [
        ("stepwell.journey", "ids starting with 'stepwell.' are reserved"),
        ("a#b", "must not contain '#'"),
        (5, "invalid workflow id 5: must be a string"),
        ("x" * 129, "129 characters; at most 128"),
    ],
)
def test_an_id_the_store_would_refuse_is_refused_by_validation(workflow_id: Any, message: str) -> None:
    document = base()
    document["id"] = workflow_id
    assert any(message in error for error in errors_of(document))


def http_node(headers: object) -> dict[str, Any]:
    document = base()
    document["nodes"][1] = {
        "id": "greet",
        "type": "action",
        "action": "stepwell.http",
        "input": {"url": "'https://api.example.com/'", "headers": headers},
    }
    return document


def test_literal_http_headers_that_frame_the_message_are_refused_when_stored() -> None:
    errors = validate_definition(
        http_node({"X-Api-Key": "k", "Content-Length": "0", "proxy-connection": "x"})
    )
    assert [error.split(":")[0] for error in errors] == ["node 'greet' (action)"] * 2, errors
    assert "header 'Content-Length' is not allowed" in errors[0]
    assert "header 'proxy-connection' is not allowed" in errors[1]
    assert "not Host (it comes from the url)" in errors[0]
    assert validate_definition(http_node({"X-Api-Key": "k", "Accept": "application/json"})) == []
    assert validate_definition(http_node("data.headers")) == []  # an expression: checked at run time


def put_event_node(detail_type: str) -> dict[str, Any]:
    document = base()
    document["nodes"][1] = {
        "id": "greet",
        "type": "action",
        "action": "stepwell.put_event",
        "input": {"detailType": detail_type, "detail": {}},
    }
    return document


def test_a_constant_engine_detail_type_is_refused_when_stored() -> None:
    for constant in ("'stepwell.callback.success'", "'stepwell.' + 'callback.failure'"):
        errors = validate_definition(put_event_node(constant))
        assert len(errors) == 1 and errors[0].startswith("node 'greet' (action): input.detailType: "), errors
        assert "starting with 'stepwell.' are the engine's own commands" in errors[0]
    [status_change] = validate_definition(put_event_node("'Stepwell Execution Status Change'"))
    assert "it is the engine's execution status change" in status_change
    assert validate_definition(put_event_node("'order.shipped'")) == []
    assert validate_definition(put_event_node("data.kind")) == []  # reads data: checked at run time


def test_a_trailing_newline_does_not_pass_as_a_whole_value() -> None:
    """`re.match` with `$` accepts a value ending in a newline: ids and data keys are matched whole."""
    document = base()
    document["nodes"][1]["output"] = "greeting\n"
    document["nodes"][9]["id"] = "done\n"
    errors = validate_definition(document)
    assert any(error.startswith("node 'greet' (action): 'output' must be a data key") for error in errors), (
        errors
    )
    assert any(error.startswith("node #9: invalid id 'done\\n'") for error in errors), errors
    with pytest.raises(ValueError, match="bad duration"):
        parse_duration("P\n")
    assert parse_duration(" P3D\n") == 3 * 86400  # surrounding spaces are stripped, as before


def test_an_event_name_with_a_control_character_is_refused_by_the_rules_and_the_schema() -> None:
    schema = json.loads(Path(SCHEMA_PATH).read_text())
    published = re.compile(schema["$defs"]["eventName"]["pattern"])
    for bad in ("signed\nup", "signed_up\x00", "a\x7fb", "\tsigned_up"):
        document = base()
        document["nodes"][0]["event"] = bad
        errors = validate_definition(document)
        assert len(errors) == 1 and "no control characters" in errors[0], errors
        assert repr(bad)[1:-1] in errors[0]
        assert not published.fullmatch(bad)
    for good in ("signed_up", "order.shipped v2", "ünïcode-événement"):
        document = base()
        document["nodes"][0]["event"] = good
        assert validate_definition(document) == []
        assert published.fullmatch(good)
