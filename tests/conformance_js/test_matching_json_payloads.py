"""The extension block's rule that lets one case hold for both SDKs (tests/conformance/matching.py): a
`Payload` string compares as the JSON value it holds, while AWS's rules, which judge the rest of a case,
still compare it literally."""

from __future__ import annotations

import sys
from pathlib import Path

CONFORMANCE_DIR = Path(__file__).resolve().parents[1] / "conformance"
if str(CONFORMANCE_DIR) not in sys.path:
    sys.path.insert(0, str(CONFORMANCE_DIR))

from matching import AWS, EXTENSION, Placeholders, Rules, match_history  # noqa: E402


def _event(payload: str, key: str = "Payload") -> dict[str, object]:
    return {"EventId": 2, "ChainedInvokeStartedDetails": {"Input": {key: payload}}}


def _errors(expected: str, actual: str, rules: Rules, key: str = "Payload") -> list[str]:
    names = Placeholders()
    names.resolve_variables({"VALUE": "abc"})
    return match_history([_event(expected, key)], [_event(actual, key)], names, rules)


def test_a_payload_matches_the_same_json_value_spaced_either_way_in_the_extension() -> None:
    expected = '{"value": "${VALUE}", "n": [1, 2]}'
    assert _errors(expected, '{"value":"abc","n":[1,2]}', EXTENSION) == []
    assert _errors(expected, '{"n": [1, 2], "value": "abc"}', EXTENSION) == []


def test_another_json_value_or_text_that_is_not_json_still_differs() -> None:
    expected = '{"value": "${VALUE}"}'
    assert _errors(expected, '{"value":"abd"}', EXTENSION) != []
    assert _errors(expected, '{"value":"abc","extra":1}', EXTENSION) != []
    assert _errors("not json", "not  json", EXTENSION) != []
    # A string holding JSON equals only the same JSON value: "1" is not 1.
    assert _errors('"1"', "1", EXTENSION) != []


def test_aws_rules_and_other_keys_compare_literally() -> None:
    assert _errors('{"value": "${VALUE}"}', '{"value":"abc"}', AWS) != []
    assert _errors('{"value": "${VALUE}"}', '{"value": "abc"}', AWS) == []
    assert _errors('{"a": 1}', '{"a":1}', EXTENSION, key="Input") != []
