"""The "Scale model" section of BENCHMARKS.md (and what `make scale` prints): per target, the first limit
it hits, the partitions and quotas hottest first; the per-unit profile of each kind; the limits used."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reporting import md_table, wrap_markdown

from scale.limits import (
    DYNAMODB_PARTITIONS,
    PARTITION_HEADROOM,
    PARTITION_READ_UNITS,
    PARTITION_WRITE_UNITS,
    QUOTA_BY_KEY,
    QUOTAS,
    SQS,
    SQS_NOTE,
    Measure,
)
from scale.model import KindProfile, Projection, Scope, Target, is_count

TITLE = "Scale model"
SECTION_NAME = "scale"
PARTITION_ROWS = 6
LABEL_WIDTH = 48


def _number(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:,.1f}"
    return f"{value:.2g}"


def _percent(value: float) -> str:
    return f"{value * 100:,.0f} %" if value >= 0.01 else "< 1 %"


def _label(text: str) -> str:
    text = text if len(text) <= LABEL_WIDTH else text[: LABEL_WIDTH - 1] + "…"
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def verdict(projection: Projection) -> str:
    """Issue 42's test: no partition over half its limit and no quota over its default, or over it only where
    AWS raises it on request ("passes with raises": the README's "Running at scale" lists them)."""
    partitions = max((p.utilisation for p in projection.partitions), default=0.0)
    over = [q for q in projection.quotas if q.utilisation > 1]
    if partitions > PARTITION_HEADROOM or any(not QUOTA_BY_KEY[q.key].adjustable for q in over):
        return "fails"
    return "passes with raises" if over else "passes"


def summary_table(projections: Sequence[Projection]) -> str:
    rows = []
    for projection in projections:
        what, at = projection.first_limit()
        target = projection.target
        hit = f"{_number(at)} {target.unit}" if at is not None else "never"
        _, utilisation = projection.hottest()
        rows.append([target.name, what, _percent(utilisation), hit, verdict(projection)])
    targets = "\n".join(f"- {p.target.name}: {p.target.description}" for p in projections)
    table = md_table(["Target", "First limit hit", "At the target", "Hit at", "Issue 42"], rows)
    return targets + "\n\n" + table


def _heading(target: Target) -> str:
    return f"Target {target.name}: {target.description}"


def partition_table(projection: Projection) -> str:
    rows = [
        [
            p.place,
            _label(p.label),
            f"one of {p.shards} shards" if p.shards else p.scope.value,
            _number(p.write_per_second),
            _number(p.read_per_second),
            _percent(p.utilisation),
        ]
        for p in projection.partitions[:PARTITION_ROWS]
    ]
    return md_table(["Table/index", "Partition key value", "Values", "WCU/s", "RCU/s", "Of limit"], rows)


def quota_table(projection: Projection) -> str:
    rows = []
    for rate in projection.quotas:
        quota = QUOTA_BY_KEY[rate.key]
        unit = "" if is_count(rate.key) else "/s"
        rows.append(
            [
                quota.name,
                f"{_number(rate.value)}{unit}",
                f"{quota.default:,.0f}{unit}",
                _percent(rate.utilisation),
            ]
        )
    rows.append(["SQS: requests (work queue)", f"{_number(projection.sqs_requests)}/s", "none", "-"])
    return md_table(["Quota", "At the target", "Default", "Of default"], rows)


def profile_table(profiles: Mapping[str, KindProfile]) -> str:
    rows = []
    for profile in profiles.values():
        requests = writes = reads = 0.0
        invocations = 0.0
        for phase in profile.phases.values():
            requests += sum(n for name, n in phase.calls.items() if not name.endswith(" entries"))
            invocations += phase.charges.get("lambda_invocations", 0.0)
            for use in phase.partitions:
                if use.scope not in (Scope.PRIVATE, Scope.FIXED):
                    writes += use.write_units
                    reads += use.read_units
        units = profile.units
        rows.append(
            [
                profile.kind,
                f"{units:,}" + (f" ({profile.groups} tenants)" if profile.groups > 1 else ""),
                _number(requests / units),
                _number(invocations / units),
                _number(writes / units),
                _number(reads / units),
                _number(profile.schedules_per_wait),
            ]
        )
    header = ["Kind", "Units", "Requests", "Invocations", "Shared WU", "Shared RU", "Schedules held"]
    return md_table(header, rows)


def limits_table() -> str:
    """The limits with their sources as reference links (a URL in a row would overrun the line length)."""
    sources: dict[str, str] = {}

    def link(url: str) -> str:
        name = sources.setdefault(url, f"scale-{len(sources) + 1}")
        return f"[source][{name}]"

    both = f"{PARTITION_WRITE_UNITS:,} WCU/s, {PARTITION_READ_UNITS:,} RCU/s"
    rows = [["DynamoDB: one partition (table or GSI)", both, link(DYNAMODB_PARTITIONS)]]
    notes = []
    for quota in QUOTAS:
        unit = "" if quota.measure is Measure.COUNT else "/s"
        rows.append([quota.name, f"{quota.default:,.0f}{unit}", link(quota.source)])
        if quota.note:
            notes.append(f"- {quota.name}: {quota.note}.")
    rows.append(["SQS: standard queue", "nearly unlimited", link(SQS)])
    notes.append(f"- SQS: {SQS_NOTE}; the model reports its rate without a quota.")
    table = md_table(["Limit (us-east-1 default)", "Value", "Source"], rows)
    links = "\n".join(f"[{name}]: {url}" for url, name in sources.items())
    return table + "\n\n" + wrap_markdown("\n".join(notes)) + "\n\n" + links


def render(
    projections: Sequence[Projection],
    profiles: Mapping[str, KindProfile],
    *,
    commit: str,
    seconds: float,
    requests: int,
    settings: str,
) -> str:
    units = sum(profile.units for profile in profiles.values())
    run = (
        f"`make scale` (tools/scale.py) at commit {commit}: {units:,} units of {len(profiles)} kinds run on "
        f"moto in-process with {settings} ({requests:,} AWS requests recorded, {seconds:,.0f} s)"
    )
    intro = f"""{run}, each request's DynamoDB partitions and quota counted, then projected to issue 42's
targets. A partition key value shared by every unit of a kind takes the whole rate; one per tenant takes its
tenant's share; one per execution is bounded by one execution's units within a second. How the model works,
its assumptions and every limit's source: [the scale model](docs/reference/scale.md)."""
    goal = f"""Issue 42 asks for no partition above {PARTITION_HEADROOM:.0%} of its limit and no quota above
its default (or a raise AWS allows, listed in the README's "Running at scale": "passes with raises" when only
quotas AWS raises on request are over theirs). "At the target" is the first limit's share at the target;
"Hit at" is the target's figure at which it reaches 100 %. A throttled GSI partition throttles the writes to
its table too."""
    costs = """Per execution (definitions: per subject, two events): AWS requests, Lambda invocations,
DynamoDB write and read units in partitions shared with other units, and Scheduler schedules held while one
waits."""
    parts = [f"## {TITLE}", "", wrap_markdown(intro), "", summary_table(projections), "", wrap_markdown(goal)]
    for projection in projections:
        parts += [
            "",
            f"### {_heading(projection.target)}",
            "",
            partition_table(projection),
            "",
            quota_table(projection),
        ]
    parts += [
        "",
        "### What one unit of each kind costs",
        "",
        wrap_markdown(costs),
        "",
        profile_table(profiles),
    ]
    parts += ["", "### Limits", "", limits_table()]
    return "\n".join(parts) + "\n"
