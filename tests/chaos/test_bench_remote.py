"""The bench's `remote` section (issue 41): its arithmetic (Lambda's billed milliseconds, GB-seconds, the
cost of a run) and its tables laid out within the file's 120 characters, on made-up figures (the bench
itself measures the real thing), and `--update`'s replacing of one section of BENCHMARKS.md."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

from bench import document, remote_stack  # noqa: E402
from bench.measurement import Measurement, ModelledCharges  # noqa: E402
from bench.meter import ApiTally  # noqa: E402
from bench.prices import PRICES  # noqa: E402
from bench.remote_stack import BURN_MS, SIZES, Place, Result, Role, Usage  # noqa: E402
from bench.section import SectionResult  # noqa: E402
from bench.sections import remote  # noqa: E402
from bench.sections.api import ASSUMED_REQUEST_MS  # noqa: E402
from reporting import MAX_LINE, wrap_markdown  # noqa: E402


def test_billed_time_is_rounded_up_to_the_millisecond_with_each_request_s_round_trip() -> None:
    per_request = ASSUMED_REQUEST_MS
    assert remote_stack.billed_ms(0.010, 0) == 10
    assert remote_stack.billed_ms(0.0101, 0) == 11
    assert remote_stack.billed_ms(0.0, 0) == 1  # Lambda bills at least 1 ms
    assert remote_stack.billed_ms(0.0005, 2) == 1 + 2 * per_request  # 0.5 ms rounds up
    assert remote_stack.billed_ms(0.002, 1, waited_ms=30) == 2 + per_request + 30
    with pytest.raises(ValueError, match="must be >= 0"):
        remote_stack.billed_ms(-0.001, 0)


def test_gb_seconds_are_memory_in_gb_times_billed_seconds() -> None:
    assert remote_stack.gb_seconds(1024, 1000) == 1.0
    assert remote_stack.gb_seconds(512, 3) == pytest.approx(0.0015)
    usage = Usage(runs=2)
    usage.billed[Role.WORKER] += [100, 300]  # the worker: 512 MB
    usage.billed[Role.API] += [40]  # the API function: 256 MB
    assert usage.gb_seconds(Role.WORKER) == pytest.approx(0.5 * 0.4)
    assert usage.gb_seconds(Role.API) == pytest.approx(0.25 * 0.04)
    assert usage.per_run(usage.milliseconds(Role.WORKER)) == 200


def _measurement(runs: int, steps: int) -> Measurement:
    return Measurement(
        label="made up",
        executions=runs,
        operations=steps * runs,
        operation_kinds=Counter({"STEP": steps * runs}),
        calls={"lambda.Invoke": 2 * runs, "events.PutEvents": 2 * runs, "dynamodb.PutItem": steps * runs},
        dynamo={
            "PutItem (operations)": ApiTally(calls=steps * runs, write_units=1.25 * steps * runs),
            "GetItem (executions)": ApiTally(calls=3 * runs, read_units=3.0 * runs),
        },
        modelled=ModelledCharges(esm_receives=runs, esm_deletes=runs, lambda_invocations=2 * runs),
        reported_read_units=0.0,
        reported_write_units=0.0,
        wall_seconds=1.0,
    )


def test_a_run_costs_its_units_requests_invocations_and_gb_seconds() -> None:
    runs = 2
    usage = Usage(runs=runs, destination_sends=runs)
    usage.billed[Role.WORKER] += [100] * (2 * runs)
    usage.billed[Role.API] += [50] * (3 * runs)
    usage.billed[Role.FUNCTION] += [200] * runs
    costs = remote.run_costs(_measurement(runs, 10), usage)
    price = {name: PRICES[name].per_unit for name in PRICES}
    assert costs["DynamoDB"] == pytest.approx(12.5 * price["dynamodb_wru"] + 3 * price["dynamodb_rru"])
    # The event source mapping's receive and delete, and Lambda's destination record
    assert costs["SQS"] == pytest.approx(3 * price["sqs"])
    assert costs["Scheduler, EventBridge, S3"] == pytest.approx(2 * price["events"])
    # Every invocation: the worker's 2, the API's 3, the function's 1 per run
    assert costs["Lambda requests"] == pytest.approx(6 * price["lambda_request"])
    worker_and_api = 2 * 0.5 * 0.1 + 3 * 0.25 * 0.05
    assert costs["Lambda GB-s, worker and API"] == pytest.approx(worker_and_api * price["lambda_gb_second"])
    assert costs["Lambda GB-s, your function"] == pytest.approx(0.5 * 0.2 * price["lambda_gb_second"])


def _result(place: Place, steps: int, burn: int, worker_ms: list[int], *, function_ms: int) -> Result:
    runs = len(worker_ms)
    usage = Usage(runs=runs, destination_sends=0 if place is Place.WORKER else 99_999 * runs)
    usage.billed[Role.WORKER] += worker_ms
    if place is not Place.WORKER:
        usage.billed[Role.API] += [45] * (steps * runs)
        usage.billed[Role.FUNCTION] += [function_ms] * runs
        usage.data_plane.update(
            {"CheckpointDurableExecution": steps * runs, "GetDurableExecutionState": runs}
        )
        usage.requests[Role.API].update({"dynamodb.GetItem": 2 * steps * runs})
    usage.requests[Role.WORKER].update({"dynamodb.PutItem": 9_999 * runs})
    return Result(place, steps, burn, _measurement(runs, steps * 1_000), usage)


def _section(burned: dict[Place, list[int]]) -> SectionResult:
    """The section of made-up runs: each variant's worker at 100 ms a run, but the burn runs' (`burned`)."""
    results = [
        _result(place, steps, burn, burned[place] if burn else [100, 100, 100], function_ms=99_999)
        for steps, burn in [*((size, 0) for size in SIZES), (SIZES[0], BURN_MS)]
        for place in Place
    ]
    return remote._result(results, None)


def test_the_section_fits_the_file_and_tells_whether_the_worker_paid_for_the_function() -> None:
    # In the worker the burn is the worker's; the Python function's worker took 99.3 ms less, the JavaScript
    # one's 99.3 ms more (more than 10 % of the burn: the worker paid for the function's run)
    burned = {Place.WORKER: [300, 300, 300], Place.PYTHON: [1, 1, 0], Place.JAVASCRIPT: [199, 199, 200]}
    section = _section(burned)
    text = wrap_markdown(section.markdown)
    too_long = [line for line in text.split("\n") if len(line) > MAX_LINE]
    assert not too_long
    assert "| 100 steps, JS fn |" in text and "| 3 steps +200 ms, Python fn |" in text
    assert [row[1:] for row in section.targets] == [("-99.3 ms", "met"), ("99.3 ms", "NOT met")]
    unchanged = _section(
        {Place.WORKER: [300, 300, 300], Place.PYTHON: [110, 110, 110], Place.JAVASCRIPT: [100] * 3}
    )
    assert [row[1:] for row in unchanged.targets] == [("10 ms", "met"), ("0 ms", "met")]


def test_update_replaces_only_the_sections_run_and_the_prices() -> None:
    existing = "\n".join(
        [
            "# Stepwell benchmarks",
            "",
            "## How measured",
            "",
            "kept as it is",
            "",
            document.PRICES_HEADING,
            "",
            "an old table",
            "",
            "## Remote durable functions",
            "",
            "old figures",
            "",
            "## Other section",
            "",
            "other figures",
            "",
            "<!-- chaos:start -->",
            "## Load and faults",
            "<!-- chaos:end -->",
            "",
        ]
    )
    updated = document.update(existing, [SectionResult("Remote durable functions", "new figures")])
    assert "old figures" not in updated and "an old table" not in updated
    assert updated.index("new figures") < updated.index("## Other section")
    for kept in ("kept as it is", "other figures", "<!-- chaos:start -->\n## Load and faults"):
        assert kept in updated
    assert "Lambda duration, arm64 (GB-second)" in updated
    added = document.update(existing, [SectionResult("A new one", "its figures")])
    assert added.index("its figures") < added.index("<!-- chaos:start -->")
    assert "old figures" in added
