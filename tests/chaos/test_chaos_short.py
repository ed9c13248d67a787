"""The short version of `make chaos` (tools/chaos.py): a mix of workflows on worker processes over moto's
server while faults are injected, checked for loss, double results, double events and unexplained step
re-runs; plus the checks and the fault layer on their own, so a check that could never fail is caught. The
run over LocalStack (four and a half minutes of make test's time) is `make chaos`'s, with the long runs."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

TOOLS = Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))

from chaos.checks import Report, check_history, corrected_lag, explain_reruns, real_time  # noqa: E402
from chaos.record import Jump, RunData  # noqa: E402
from chaos.render import SECTION_NAMES, percentile, render  # noqa: E402
from chaos.run import run  # noqa: E402
from chaos.settings import MIX, Settings  # noqa: E402
from chaos.workdir import read_lines  # noqa: E402
from reporting import markers, write_section  # noqa: E402
from stepwell.testing.backends import Backend  # noqa: E402
from stepwell.testing.faults import FaultInjector, SqsDuplicator  # noqa: E402

SHORT_EXECUTIONS = 70  # ten of each kind


@pytest.mark.moto
def test_short_chaos_run_loses_nothing_and_explains_every_rerun(
    tmp_path: Path, stepwell_backend: Backend
) -> None:
    # A generous wait for the ends: on a loaded machine the run takes minutes, not seconds.
    settings = Settings(
        executions=SHORT_EXECUTIONS, workers=4, timeout=420.0, kill_by=8, backend=stepwell_backend.name
    )
    # On the session's LocalStack (a second one would take half a minute to start); on a moto server of its
    # own, as `make chaos` runs: moto answers in one thread, which the session's pollers also use.
    endpoint = stepwell_backend.endpoint_url if stepwell_backend.name == "localstack" else None
    report = run(settings, tmp_path, endpoint=endpoint)
    # Every assertion shows the run's report when it fails: a short run is random, and its report is the
    # one record of what happened.
    section = render(report)

    assert report.failed_checks == [], section
    kinds = [MIX[index % len(MIX)] for index in range(SHORT_EXECUTIONS)]
    # Every begin event started its definitions context, and each parent's child ran too.
    assert len(report.data.started) == SHORT_EXECUTIONS, section
    assert sorted(report.data.started.values()) == sorted(kinds), section
    assert report.executions == SHORT_EXECUTIONS + kinds.count("parent"), section
    assert report.ended == {"SUCCEEDED": report.executions}, section
    ledger_steps = {line["step"] for line in read_lines(tmp_path / "ledger.jsonl")}
    assert {"flaky", "branch-2", "child-step", "slow", "note"} <= ledger_steps, section
    # The faults happened at the rates the issue asks for.
    assert sum(report.faults.values()) >= 0.10 * report.fault_attempts, section
    assert any("every attempt" in kind for kind in report.faults), section
    assert sum(report.kills.values()) >= 0.05 * report.invocations, section
    assert report.data.callback_repeats_refused == kinds.count("callback"), section
    causes = " / ".join(report.reruns)
    assert "retry strategy" in causes, section
    assert "lease expired" in causes, section
    assert report.lags, "no wake-up lag was measured\n" + section
    assert "| executions lost (must be 0) | 0 |" in section
    assert ("LocalStack" in section) == (stepwell_backend.name == "localstack"), section
    # The workers ran as a published version, as deployed: every execution's end names it.
    assert "| 0 (workers run as version 1) |" in section, section


def test_an_end_that_does_not_name_the_workers_version_fails_the_run() -> None:
    report = Report(RunData(Settings()))
    assert report.failed_checks == []
    report.unpinned_ends.append("default#quick#s/1: None")
    assert report.failed_checks == ["ended executions without the version that ran them: 1"]


def _event(
    event_id: int, event_type: str, operation: str, name: str, at: float, **retry: Any
) -> dict[str, Any]:
    details = {"RetryDetails": {"CurrentAttempt": 1, **retry}}
    stamp = dt.datetime.fromtimestamp(at, dt.UTC)
    return {
        "EventId": event_id,
        "EventType": event_type,
        "Id": operation,
        "Name": name,
        "EventTimestamp": stamp,
        f"{event_type}Details": details,
    }


def test_history_check_finds_two_results_and_repeated_events() -> None:
    report = Report(RunData(Settings()))
    retried = _event(1, "StepFailed", "op1", "flaky", 10.0, NextAttemptDelaySeconds=1)
    succeeded = _event(2, "StepSucceeded", "op1", "flaky", 12.0, CurrentAttempt=2)
    clean = check_history("e-clean", [retried, succeeded], report)
    assert (report.double_results, report.double_events, report.bad_event_ids) == ([], [], [])
    assert clean == {("flaky", 1): 10.0, ("flaky", 2): 12.0}

    again = dict(succeeded, EventId=3)
    check_history("e-twice", [retried, succeeded, again], report)
    assert report.double_results == ["e-twice operation op1 attempt 2", "e-twice operation op1"]
    assert len(report.double_events) == 1
    check_history("e-gap", [retried, dict(succeeded, EventId=5)], report)
    assert report.bad_event_ids == ["e-gap"]


def test_rerun_after_a_stored_result_is_unexplained() -> None:
    report = Report(RunData(Settings()))
    first = {
        "execution": "e",
        "step": "s",
        "attempt": 1,
        "invocation": "1-1",
        "at": 100.0,
        "outcome": "returned",
    }
    killed_rerun = dict(first, invocation="2-1", at=101.0)
    explain_reruns([first, killed_rerun], {"e": {("s", 1): 101.5}}, {"1-1"}, report)
    assert report.unexplained == []
    assert report.reruns == {"its worker was killed before the checkpoint": 1}

    # A re-run within the margin of the result's time is not counted: the write lands after that time.
    late_rerun = dict(first, invocation="2-1", at=103.0)
    explain_reruns([first, late_rerun], {"e": {("s", 1): 101.5}}, set(), report)
    assert report.unexplained == []
    late_rerun["at"] = 104.0
    explain_reruns([first, late_rerun], {"e": {("s", 1): 101.5}}, set(), report)
    assert len(report.unexplained) == 1
    assert "its result was stored at 101.500" in report.unexplained[0]
    # Compared in real time: a clock skip between the result and the re-run does not make it late.
    report.unexplained.clear()
    skipped = [Jump(start=101.6, end=3701.6)]
    rerun = dict(first, invocation="2-1", at=3701.0, real=101.0)
    explain_reruns([first, rerun], {"e": {("s", 1): 101.5}}, set(), report, skipped)
    assert report.unexplained == []
    assert real_time(3702.0, skipped) == pytest.approx(102.0)


def test_wake_up_lag_leaves_out_clock_skips() -> None:
    jumps = [Jump(start=105.0, end=3705.0)]
    # Due at 104, run at 3706 on the virtual clock: 1 s before the skip and 1 s after it.
    assert corrected_lag(3602.0, 3706.0, jumps) == pytest.approx(2.0)
    # Due inside the skip (a schedule's time): only the time after the skip counts.
    assert corrected_lag(1.5, 3706.5, jumps) == pytest.approx(1.5)
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) in (2.0, 3.0)


def test_write_section_replaces_only_its_own_section(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Stepwell benchmarks\n\nbench text\n")
    moto_start, moto_end = markers(SECTION_NAMES["moto"])
    local_start, local_end = markers(SECTION_NAMES["localstack"])
    write_section(path, "## Load and faults\n\nfirst\n", SECTION_NAMES["moto"])
    write_section(path, "## Load and faults on LocalStack\n\nlocal first\n", SECTION_NAMES["localstack"])
    write_section(path, "## Load and faults\n\nsecond\n", SECTION_NAMES["moto"])
    text = path.read_text()
    assert text.startswith("# Stepwell benchmarks\n\nbench text\n\n" + moto_start)
    assert "second" in text and "first\n" not in text.replace("local first\n", "")
    assert text.count(moto_start) == 1 and text.index(moto_end) < text.index(local_start)
    # Each backend's run replaces its own section and keeps the other's.
    write_section(path, "## Load and faults on LocalStack\n\nlocal second\n", SECTION_NAMES["localstack"])
    text = path.read_text()
    assert "local second" in text and "local first" not in text and "second\n" in text
    assert text.count(local_start) == 1 and text.rstrip().endswith(local_end)


def _offline_client(service: str) -> Any:
    # No server answers: every attempt the injector does not answer would fail to connect.
    config = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=1, read_timeout=1)
    return boto3.client(
        service,  # type: ignore[call-overload]
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=config,
    )


@pytest.mark.parametrize(
    ("service", "call", "codes"),
    [
        (
            "dynamodb",
            lambda c: c.get_item(TableName="t", Key={"k": {"S": "v"}}),
            {"ProvisionedThroughputExceededException", "InternalFailure"},
        ),
        ("sqs", lambda c: c.get_queue_url(QueueName="q"), {"RequestThrottled", "InternalFailure"}),
        ("scheduler", lambda c: c.get_schedule(Name="s"), {"ThrottlingException", "InternalFailure"}),
    ],
)
def test_fault_injector_fails_every_attempt_of_a_burst(service: str, call: Any, codes: set[str]) -> None:
    client = _offline_client(service)
    faults = FaultInjector(rate=0.0, burst_rate=1.0, seed=1)
    faults.attach(client)
    with pytest.raises(ClientError) as raised:
        call(client)
    assert raised.value.response["Error"]["Code"] in codes
    retried = raised.value.response["ResponseMetadata"]["RetryAttempts"]
    assert retried >= 1  # botocore retried it, and every attempt failed
    assert faults.attempts == retried + 1 == faults.total()


def test_fault_injector_refuses_a_bad_rate_and_an_unknown_service() -> None:
    with pytest.raises(ValueError, match=r"fault rate must be between 0 and 1, got 1\.5"):
        FaultInjector(rate=1.5, burst_rate=0.0)
    with pytest.raises(ValueError, match="no faults for service 's3'"):
        FaultInjector(rate=0.1, burst_rate=0.0).attach(_offline_client("s3"))


def test_sqs_duplicator_sends_each_message_twice_with_extra_delay() -> None:
    from moto import mock_aws

    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        duplicating = boto3.client("sqs", region_name="us-east-1")
        duplicator = SqsDuplicator(sqs, max_extra_delay=0, seed=1)
        duplicator.attach(duplicating)
        duplicating.send_message(QueueUrl=url, MessageBody="one")
        duplicating.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "two"}])
        bodies = sorted(
            m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        )
    assert bodies == ["one", "one", "two", "two"]
    assert duplicator.counts["sqs messages duplicated"] == 2


def test_a_bench_run_keeps_both_chaos_sections(tmp_path: Path) -> None:
    from bench import document  # tools/bench/, on the path above

    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Stepwell benchmarks\n\nold bench text\n")
    write_section(path, "## Load and faults\n\nmoto run\n", SECTION_NAMES["moto"])
    write_section(path, "## Load and faults on LocalStack\n\nlocalstack run\n", SECTION_NAMES["localstack"])
    document.write(path, "# Stepwell benchmarks\n\nnew bench text\n")
    text = path.read_text()
    assert text.startswith("# Stepwell benchmarks\n\nnew bench text\n") and "old bench text" not in text
    for name in SECTION_NAMES.values():
        start, end = markers(name)
        assert text.count(start) == 1 and text.count(end) == 1
    assert "moto run" in text and "localstack run" in text
