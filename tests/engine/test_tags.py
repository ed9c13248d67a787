"""Execution tags in-process: kept with the execution, shown by describe, listed by tag within a domain
(newest first, by status, in pages); bad tags are refused naming the tag and the rule."""

from __future__ import annotations

from typing import Any

import pytest
import workflows
from stepwell.errors import InvalidArgument
from stepwell.model import ExecutionStatus
from stepwell.testing.local import LocalStepwell


def _listed(local: LocalStepwell, tag: tuple[str, str], **filters: Any) -> list[str]:
    """Every execution id listed by `tag`, following the pages (two per page)."""
    ids: list[str] = []
    token: str | None = None
    while True:
        page = local.engine.list_executions(tag=tag, limit=2, next_token=token, **filters)
        ids.extend(record.execution_id for record in page.items)
        token = page.next_token
        if token is None:
            return ids


def test_tagged_executions_are_described_and_listed_by_tag_newest_first_and_by_status(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("greet", workflows.greet)
    stepwell_local.register("approval", workflows.approval)
    greeted = []
    for index in range(3):
        greeted.append(
            stepwell_local.start(
                "greet", {"name": f"n{index}"}, tags={"customer": "c-42", "source": "web form"}
            )
        )
        stepwell_local.clock.advance(1)
    waiting = stepwell_local.start("approval", None, tags={"customer": "c-42"})
    other = stepwell_local.start("greet", {"name": "x"}, tags={"customer": "c-7"})
    untagged = stepwell_local.start("greet", {"name": "y"})
    stepwell_local.run_until_idle()

    assert stepwell_local.describe(greeted[0])["Tags"] == {"customer": "c-42", "source": "web form"}
    assert stepwell_local.describe(untagged)["Tags"] == {}
    assert _listed(stepwell_local, ("customer", "c-42")) == [waiting, *reversed(greeted)]
    assert _listed(stepwell_local, ("customer", "c-42"), status="RUNNING") == [waiting]
    assert _listed(stepwell_local, ("customer", "c-42"), status=ExecutionStatus.SUCCEEDED) == greeted[::-1]
    assert _listed(stepwell_local, ("customer", "c-7")) == [other]
    assert _listed(stepwell_local, ("source", "web form"), domain="default") == greeted[::-1]

    stepwell_local.engine.stop_execution(waiting)
    stepwell_local.run_until_idle()
    assert _listed(stepwell_local, ("customer", "c-42"), status="STOPPED") == [waiting]
    assert stepwell_local.describe(waiting)["Tags"] == {"customer": "c-42"}


def test_listing_by_tag_stays_within_a_domain(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    acme = stepwell_local.start("greet", {"name": "a"}, domain="acme", tags={"customer": "c-1"})
    default = stepwell_local.start("greet", {"name": "b"}, tags={"customer": "c-1"})

    assert _listed(stepwell_local, ("customer", "c-1"), domain="acme") == [acme]
    assert _listed(stepwell_local, ("customer", "c-1")) == [default]
    assert _listed(stepwell_local, ("customer", "c-1"), domain="globex") == []


def test_starting_a_name_again_with_other_tags_returns_the_first_execution_and_its_tags(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("greet", workflows.greet)
    first = stepwell_local.start("greet", {"name": "a"}, execution_name="once", tags={"team": "ops"})
    again = stepwell_local.start("greet", {"name": "a"}, execution_name="once", tags={"team": "dev"})

    assert again == first
    assert stepwell_local.describe(first)["Tags"] == {"team": "ops"}
    assert _listed(stepwell_local, ("team", "dev")) == []
    assert _listed(stepwell_local, ("team", "ops")) == [first]


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ({f"k{i}": "v" for i in range(11)}, "11 tags given .*; at most 10"),
        ({"": "v"}, r"invalid tag key '': 1-128 characters: letters, digits and _ \. : / = \+ - @"),
        ({"k" * 129: "v"}, "invalid tag key 'k{129}': 1-128 characters"),
        ({"has space": "v"}, "invalid tag key 'has space': 1-128 characters"),
        ({"a#b": "v"}, "invalid tag key 'a#b'"),
        ({"aws:owner": "v"}, "invalid tag key 'aws:owner': the prefix 'aws:' is reserved"),
        ({"AWS:owner": "v"}, "invalid tag key 'AWS:owner': the prefix 'aws:' is reserved"),
        ({"k": "v" * 257}, "invalid value 'v{257}' of tag 'k': 0-256 characters: letters, digits, spaces"),
        ({"k": "a#b"}, "invalid value 'a#b' of tag 'k'"),
        ({"k": 7}, "invalid value 7 of tag 'k'"),
        ({7: "v"}, "invalid tag key 7"),
        (["k", "v"], r"tags must be a mapping of tag keys to values, got \['k', 'v'\]"),
    ],
)
def test_bad_tags_are_refused_naming_the_tag_and_the_rule(
    stepwell_local: LocalStepwell, tags: Any, message: str
) -> None:
    stepwell_local.register("greet", workflows.greet)
    with pytest.raises(InvalidArgument, match=message):
        stepwell_local.start("greet", {"name": "a"}, tags=tags)
    assert stepwell_local.engine.list_executions(workflow="greet").items == []


def test_the_edges_of_the_rules_are_accepted(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    tags = {f"k{i}": "" for i in range(9)}
    tags["K" * 128] = "Ünïcödé 値 _.:/=+-@ " + "v" * 200
    execution_id = stepwell_local.start("greet", {"name": "a"}, tags=tags)

    assert stepwell_local.describe(execution_id)["Tags"] == tags
    assert _listed(stepwell_local, ("K" * 128, tags["K" * 128])) == [execution_id]
    assert _listed(stepwell_local, ("k0", "")) == [execution_id]


@pytest.mark.parametrize(
    ("filters", "error", "message"),
    [
        ({"tag": ("k",)}, InvalidArgument, r"a tag filter is a \(key, value\) pair, got \('k',\)"),
        ({"tag": ("aws:k", "v")}, InvalidArgument, "the prefix 'aws:' is reserved"),
        ({"tag": ("k", "v"), "domain": "no spaces"}, InvalidArgument, "invalid domain 'no spaces'"),
        ({"tag": ("k", "v"), "workflow": "greet"}, ValueError, "tag= lists within one domain"),
    ],
)
def test_bad_tag_filters_are_refused(
    stepwell_local: LocalStepwell, filters: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        stepwell_local.engine.list_executions(**filters)
