"""The short version of `make soak` (tools/soak.py, issue 37 item 6): a few executions of each kind of the
mix run through their retention on moto's virtual clock; every table, the bucket, the queues and Scheduler
must then hold nothing. Plus the soak's counting on its own (an item without a `ttl`, a mistaken `ttl`, an
untagged object are left and fail the run), so a soak that could never fail is caught."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

import soak  # noqa: E402  (tools/ is put on the path above)
import soak_retention  # noqa: E402

from .deployment import Deployment  # noqa: E402
from .leftovers import all_items  # noqa: E402

# Three of each kind: two executions share a concurrency key, the third has its own.
SHORT = soak.Settings(per_kind=3)
# A deleted definition's version items and its domain's waits record: the delete gives them a `ttl` of the
# retention period ahead (stepwell.features.definitions.store), so they must go like the rest.
DELETED_DEFINITION_KINDS = {("definitions", "definition version"), ("definitions", "~waits")}


@pytest.fixture(scope="module")
def report() -> Iterator[soak.Report]:
    yield soak.run(SHORT)


def test_every_kind_of_the_mix_ends_as_it_should(report: soak.Report) -> None:
    section = soak.render(report)
    for kind, (_, status) in soak.KINDS.items():
        assert report.ended[kind] == {status: SHORT.per_kind}, (kind, section)
    assert report.pruned_versions == ["1"], section
    assert report.redriven_messages >= SHORT.per_kind, section  # each pinned to the deleted version


def test_nothing_is_left_once_the_retention_has_passed(report: soak.Report) -> None:
    section = soak.render(report)
    # The mix made every kind of item it can, so a 0 left means they went (and not that none was made).
    made = {kind for kind, count in report.before.items() if count}
    assert made >= {
        ("executions", "execution"),
        ("executions", "tag entry"),
        ("executions", "schedule pointer"),
        ("executions", "definitions context"),
        ("operations", "b#"),
        ("coordination", "lease#"),
        ("coordination", "cb#"),
        ("coordination", "fc#c# (concurrency key)"),
        ("coordination", "fc#r# (rate key)"),
        ("coordination", "fc#x# (reserved start)"),
        ("coordination", "rejected#"),
        ("bucket", f"object tagged {soak_retention.RETENTION_TAG_KEY}={soak_retention.RETENTION_TAG_ENDED}"),
    }, section
    left = {kind: count for kind, count in report.left.items() if count}
    assert left == {}, section
    assert report.running_kept == 0, section
    assert report.resources == {
        "work queue: messages": 0,
        "DLQ: messages": 0,
        "Scheduler group: schedules": 0,
    }, section


def test_a_deleted_definitions_versions_and_waits_record_go_too(report: soak.Report) -> None:
    section = soak.render(report)
    assert {kind: report.before[kind] > 0 for kind in DELETED_DEFINITION_KINDS} == dict.fromkeys(
        DELETED_DEFINITION_KINDS, True
    ), section
    assert {kind: report.left[kind] for kind in DELETED_DEFINITION_KINDS} == dict.fromkeys(
        DELETED_DEFINITION_KINDS, 0
    ), section


def test_a_kind_left_without_its_ttl_fails_the_soak() -> None:
    """The whole soak, with every callback record's `ttl` removed once the mix has ended (as an engine that
    skipped closing them would leave them): they are left, and the run fails naming them."""

    def strip_callback_ttls(deployment: Deployment) -> None:
        table = deployment.config.coordination_table
        for item in all_items(deployment, table):
            if item["key"]["S"].startswith("cb#"):
                deployment.clients.dynamodb.update_item(
                    TableName=table,
                    Key={"key": item["key"]},
                    UpdateExpression="REMOVE #t",
                    ExpressionAttributeNames={"#t": "ttl"},
                )

    report = soak.run(soak.Settings(per_kind=1), after_mix=strip_callback_ttls)
    assert report.left[("coordination", "cb#")] == report.before[("coordination", "cb#")] > 0
    assert any(check.startswith("left after retention: coordination cb#") for check in report.failed_checks)
    section = soak.render(report)
    assert ": FAILED." in section and "| coordination | cb# |" in section


def test_the_counting_finds_every_way_an_item_or_object_stays(deployment: Deployment) -> None:
    """No `ttl`, a `ttl` in milliseconds (centuries ahead), one more than five years past (DynamoDB's TTL
    skips it), an untagged object: all left; an expired item and a tagged object past the rule's days go."""
    config, clients = deployment.config, deployment.clients
    rule = soak_retention.read_lifecycle_rule()
    now = time.time()
    items: dict[str, dict[str, Any]] = {
        "lease#no-ttl": {},
        "lease#millis": {"ttl": {"N": str(int(now * 1000))}},
        "lease#ancient": {"ttl": {"N": "1"}},
        "lease#expired": {"ttl": {"N": str(int(now - 60))}},
    }
    for key, extra in items.items():
        clients.dynamodb.put_item(TableName=config.coordination_table, Item={"key": {"S": key}, **extra})
    bucket = config.payload_bucket
    clients.s3.put_object(Bucket=bucket, Key="ex/a/untagged", Body=b"x")
    clients.s3.put_object(
        Bucket=bucket, Key="ex/a/tagged", Body=b"x", Tagging=f"{rule.tag_key}={rule.tag_value}"
    )

    expired = soak_retention.apply_ttl(deployment, now)
    expired += soak_retention.apply_lifecycle(deployment, rule, 30, time.time() + 1, 30 * soak_retention.DAY)
    assert expired == {("coordination", "lease#"): 1, ("bucket", rule.state): 1}
    left = soak_retention.count_items(deployment, rule)
    assert left.counts == {("coordination", "lease#"): 3, ("bucket", "object untagged"): 1}
    # A tagged object the rule's days have not yet passed for stays.
    clients.s3.put_object(
        Bucket=bucket, Key="ex/b/young", Body=b"x", Tagging=f"{rule.tag_key}={rule.tag_value}"
    )
    assert (
        soak_retention.apply_lifecycle(deployment, rule, 30, time.time() + 1, 29 * soak_retention.DAY) == {}
    )


def test_the_lifecycle_rule_is_read_from_the_module() -> None:
    rule = soak_retention.read_lifecycle_rule()
    assert (rule.tag_key, rule.tag_value, rule.days_variable) == (
        soak_retention.RETENTION_TAG_KEY,
        soak_retention.RETENTION_TAG_ENDED,
        "retention_days",
    )


def test_the_soaks_section_is_replaced_by_the_next_soak_and_kept_by_a_bench_run(tmp_path: Path) -> None:
    from bench import document  # tools/bench/, on the path above
    from reporting import markers, write_section

    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Stepwell benchmarks\n\nold bench text\n")
    write_section(path, "## Soak\n\nfirst soak\n", soak.SECTION_NAME)
    write_section(path, "## Soak\n\nsecond soak\n", soak.SECTION_NAME)
    document.write(path, "# Stepwell benchmarks\n\nnew bench text\n")
    text = path.read_text()
    assert text.startswith("# Stepwell benchmarks\n\nnew bench text\n") and "old bench text" not in text
    assert "second soak" in text and "first soak" not in text
    start, end = markers(soak.SECTION_NAME)
    assert text.count(start) == 1 and text.count(end) == 1
