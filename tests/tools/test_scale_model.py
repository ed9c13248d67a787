"""`make scale`'s model without moto (tools/scale): which partitions a DynamoDB request touches and with how
many units (from the table description, so sharded index keys show as they are), and the projection of
per-unit profiles to a target's rates."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

from reporting import kept_sections  # noqa: E402
from scale.keys import TableSchema, Touch, query_partition, write_touches  # noqa: E402
from scale.limits import PARTITION_WRITE_UNITS  # noqa: E402
from scale.model import (  # noqa: E402
    Load,
    PartitionRate,
    Projection,
    QuotaRate,
    Scope,
    Target,
    build_profiles,
    estimated_shards,
    project,
    schedule_slope,
)
from scale.recorder import Recorder, Request, Tag  # noqa: E402
from scale.report import verdict  # noqa: E402

DESCRIPTION: dict[str, Any] = {
    "KeySchema": [
        {"AttributeName": "contextKey", "KeyType": "HASH"},
        {"AttributeName": "instanceId", "KeyType": "RANGE"},
    ],
    "GlobalSecondaryIndexes": [
        {
            "IndexName": "status-index",
            "KeySchema": [
                {"AttributeName": "status", "KeyType": "HASH"},
                {"AttributeName": "updatedAt", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
        },
        {
            "IndexName": "domain-index",
            "KeySchema": [{"AttributeName": "domain", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"},
        },
    ],
}
SCHEMA = TableSchema.from_description(DESCRIPTION)


def _item(status: str, *, note: str = "n", updated: str = "1") -> dict[str, Any]:
    return {
        "contextKey": {"S": "exec-1"},
        "instanceId": {"S": "0"},
        "status": {"S": status},
        "updatedAt": {"N": updated},
        "domain": {"S": "acme"},
        "note": {"S": note},
    }


def _places(touches: list[Touch]) -> list[tuple[str, str, float]]:
    return [(touch.index, touch.value, touch.write_units) for touch in touches]


def test_a_new_item_writes_its_table_partition_and_every_index_whose_keys_it_has() -> None:
    touches = write_touches("executions", SCHEMA, None, _item("RUNNING#3"))
    assert _places(touches) == [
        ("", "exec-1", 1.0),
        ("status-index", "RUNNING#3", 1.0),
        ("domain-index", "acme", 1.0),
    ]


def test_an_index_key_change_writes_the_old_and_the_new_partition_and_units_follow_size() -> None:
    before, after = _item("RUNNING"), _item("SUCCEEDED", note="x" * 1500, updated="2")
    touches = write_touches("executions", SCHEMA, before, after)
    assert _places(touches) == [
        ("", "exec-1", 2.0),  # 1,500 bytes and more: 2 KB
        ("status-index", "RUNNING", 1.0),  # the old entry removed
        ("status-index", "SUCCEEDED", 1.0),  # the new one put (KEYS_ONLY: small)
        ("domain-index", "acme", 2.0),  # same key, the whole item projected and changed
    ]


def test_a_change_outside_a_keys_only_projection_leaves_that_index_alone_and_a_transaction_doubles() -> None:
    touches = write_touches(
        "executions", SCHEMA, _item("RUNNING"), _item("RUNNING", note="m"), transactional=True
    )
    assert _places(touches) == [("", "exec-1", 2.0), ("domain-index", "acme", 2.0)]


def test_a_query_reads_the_partition_its_key_condition_names_on_the_table_or_the_index() -> None:
    on_index = {
        "IndexName": "status-index",
        "KeyConditionExpression": "#s = :s AND updatedAt < :t",
        "ExpressionAttributeNames": {"#s": "status"},
        "ExpressionAttributeValues": {":s": {"S": "RUNNING#7"}, ":t": {"N": "5"}},
    }
    assert query_partition(on_index, SCHEMA) == ("status-index", "RUNNING#7")
    on_table = {
        "KeyConditionExpression": "(contextKey = :p) AND begins_with(instanceId, :i)",
        "ExpressionAttributeValues": {":p": {"S": "exec-1"}, ":i": {"S": "0"}},
    }
    assert query_partition(on_table, SCHEMA) == ("", "exec-1")
    with pytest.raises(ValueError, match="partition key 'status'"):
        query_partition({**on_index, "KeyConditionExpression": "updatedAt < :t"}, SCHEMA)


class _Backend:
    """moto's backend as the recorder reads it: items by table and key."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, Any]] = {}

    def get_item(self, table: str, key: dict[str, Any]) -> Any:
        found = self.items.get((table, key["contextKey"]["S"]))
        return None if found is None else SimpleNamespace(to_json=lambda: {"Attributes": found})


def _model(name: str) -> Any:
    return SimpleNamespace(name=name, service_model=SimpleNamespace(service_name="dynamodb"))


def test_the_recorder_charges_an_update_to_the_partitions_of_the_item_before_and_after() -> None:
    backend = _Backend()
    raw = SimpleNamespace(describe_table=lambda TableName: {"Table": DESCRIPTION})
    recorder = Recorder(raw_dynamodb=raw, backend=backend, prefix="sw-")
    recorder.tag = Tag("straight", "straight-0")
    backend.items[("sw-executions", "exec-1")] = _item("RUNNING")
    params = {"TableName": "sw-executions", "Key": {"contextKey": {"S": "exec-1"}, "instanceId": {"S": "0"}}}
    context: dict[str, Any] = {}
    recorder._before(params=params, model=_model("UpdateItem"), context=context)
    backend.items[("sw-executions", "exec-1")] = _item("SUCCEEDED", updated="2")  # what moto did
    recorder._after("dynamodb", parsed={}, model=_model("UpdateItem"), context=context)
    (request,) = recorder.requests
    assert (request.service, request.operation, request.tag.unit) == ("dynamodb", "UpdateItem", "straight-0")
    assert {(t.table, t.index, t.value) for t in request.touches} == {
        ("executions", "", "exec-1"),
        ("executions", "status-index", "RUNNING"),
        ("executions", "status-index", "SUCCEEDED"),
        ("executions", "domain-index", "acme"),  # its entry (ALL) changed
    }
    # A refused condition is billed in the table only; a throttled request not at all.
    for code, expected in (("ConditionalCheckFailedException", 1), ("ThrottlingException", 0)):
        recorder._before(params=params, model=_model("UpdateItem"), context=context)
        recorder._after(
            "dynamodb", parsed={"Error": {"Code": code}}, model=_model("UpdateItem"), context=context
        )
        assert len(recorder.requests[-1].touches) == expected


def _request(unit: str, value: str, units: float, *, group: str = "", kind: str = "k") -> Request:
    tag = Tag(kind, unit, group)
    return Request(tag, "dynamodb", "PutItem", touches=(Touch("executions", "status-index", value, units),))


def test_projection_gives_a_shared_value_the_whole_rate_a_tenants_its_share_and_bounds_a_private_one() -> (
    None
):
    requests = [
        _request("a/u1", "RUNNING", 1.0, group="a"),
        _request("a/u2", "RUNNING", 1.0, group="a"),
        _request("b/u3", "RUNNING", 1.0, group="b"),
        _request("b/u4", "RUNNING", 1.0, group="b"),
        _request("a/u1", "a", 2.0, group="a"),
        _request("a/u2", "a", 2.0, group="a"),
        _request("b/u3", "b", 2.0, group="b"),
        _request("b/u4", "b", 2.0, group="b"),
        _request("a/u1", "exec-u1", 5.0, group="a"),
    ]
    profiles = build_profiles(
        requests,
        units={"k": 4},
        groups={"k": 2},
        charges={"k": {"run": {"lambda_invocations": 4}}},
        schedules={},
        events_per_unit={},
    )
    scopes = {use.label: use.scope for use in profiles["k"].phases["run"].partitions}
    assert scopes == {"RUNNING": Scope.SHARED, "<tenant>": Scope.TENANT, "exec-<unit>": Scope.PRIVATE}
    load = Load("k", rate=1_000, tenants=100)
    projection = project(Target("t", "a target", (load,), "units/s", 1_000), profiles)
    rates = {p.label: p.write_per_second for p in projection.partitions}
    assert rates == {"RUNNING": 1_000.0, "<tenant>": 2_000.0 / 100, "exec-<unit>": 5.0}
    what, at = projection.first_limit()
    assert what == "executions/status-index `RUNNING`"
    assert at == pytest.approx(1_000 * PARTITION_WRITE_UNITS / 1_000)
    concurrency = {q.key: q.value for q in projection.quotas}["lambda_concurrency"]
    assert concurrency == pytest.approx(1_000 * (0.020 + 9 * 0.010 / 4))


def test_schedules_held_split_into_one_per_waiting_unit_and_a_fixed_part() -> None:
    assert schedule_slope({10: 12, 20: 22}) == (1.0, 2.0)
    assert schedule_slope({10: 3, 20: 3}) == (0.0, 3.0)


def test_a_bench_run_keeps_the_scale_section(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    path.write_text(
        "# old\n<!-- scale:start -->\n## Scale model\n<!-- scale:end -->\n"
        "<!-- other:start -->x<!-- other:end -->\n"
    )
    assert kept_sections(path) == "\n<!-- scale:start -->\n## Scale model\n<!-- scale:end -->\n"


def test_shards_are_one_row_at_one_shards_load_and_a_sweeps_own_item_a_minutes_cost() -> None:
    # 40 units over 4 shards; shard 0 is the plain value.
    requests = [_request(f"u{n}", "RUNNING" if n % 4 == 0 else f"RUNNING#{n % 4}", 1.0) for n in range(40)]
    requests += [_request("u0", "exec-u0", 1.0), _request("sweep", "exec-u0", 1.0)]  # the sweep woke u0
    requests += [_request("sweep", "~due#state", 30.0), _request("u1", "cb#Zq3", 1.0)]  # a random id: u1's
    profiles = build_profiles(
        requests, units={"k": 40}, groups={}, charges={}, schedules={}, events_per_unit={}, sweeps={"k": 1}
    )
    uses = {use.label: use for use in profiles["k"].phases["run"].partitions}
    assert set(uses) == {"RUNNING#<shard>", "exec-<unit>", "~due#state", "cb#Zq3"}
    assert uses["cb#Zq3"].scope is Scope.PRIVATE
    assert uses["RUNNING#<shard>"].shards == 4
    assert uses["RUNNING#<shard>"].write_units == pytest.approx(10.0, rel=0.01)
    assert uses["exec-<unit>"].scope is Scope.PRIVATE
    assert uses["~due#state"].scope is Scope.FIXED
    projection = project(Target("t", "a target", (Load("k", rate=800),), "units/s", 800), profiles)
    rates = {p.label: p.write_per_second for p in projection.partitions}
    assert rates["RUNNING#<shard>"] == pytest.approx(200.0, rel=0.01)
    assert rates["~due#state"] == pytest.approx(30.0 / 60)  # one sweep a minute, whatever the rate


def test_the_shard_count_is_estimated_from_the_shards_the_touches_found() -> None:
    assert estimated_shards(4, 400) == pytest.approx(4.0, rel=0.01)  # well sampled: what was seen
    assert estimated_shards(5, 5) == 5.0  # every touch a new shard: a lower bound
    # 40 touches finding 25 of them: about 40 shards (25 seen would make each shard 1.6 times too hot).
    assert 35 < estimated_shards(25, 40) < 45


def test_a_deployment_setting_is_typed_as_its_field_and_a_bad_one_is_named() -> None:
    from scale.workload import settings

    @dataclasses.dataclass(frozen=True)
    class Config:
        index_shards: int = 1
        long_wait_wakeups: str = "schedules"
        direct_wake_ups: bool = False

    config = Config()
    values = settings(config, {"index_shards": "16", "long_wait_wakeups": "sweep", "direct_wake_ups": "true"})
    assert values == {"index_shards": 16, "long_wait_wakeups": "sweep", "direct_wake_ups": True}
    with pytest.raises(ValueError, match="--set shards: not a deployment setting"):
        settings(config, {"shards": "2"})
    with pytest.raises(ValueError, match="--set index_shards=many: a int"):
        settings(config, {"index_shards": "many"})


def test_the_verdict_passes_a_target_over_adjustable_quotas_only_with_raises() -> None:
    target = Target("t", "a target", (), "units/s", 1_000)

    def projection(partition_writes: float, **quotas: float) -> Projection:
        partitions = [PartitionRate("executions", "", "RUNNING", Scope.SHARED, partition_writes, 0.0)]
        return Projection(target, partitions, [QuotaRate(key, value) for key, value in quotas.items()])

    assert verdict(projection(500, put_events=10_000)) == "passes"
    assert verdict(projection(500, put_events=20_000, lambda_concurrency=1_300)) == "passes with raises"
    assert verdict(projection(501, put_events=100)) == "fails"  # a partition over half its limit
    assert verdict(projection(100, lambda_scaling=1_939)) == "fails"  # Lambda's scaling rate is not raised
