"""`stepwell local` without a stack: durations, the state file, the errors a user meets, and `advance`
stepping the clock through one-time schedules in their order (moto's in-process mock, a fake runtime)."""

from __future__ import annotations

import io
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from stepwell.cli import main
from stepwell.cli.local import LocalError, LocalState, parse_duration, server_running, state_dir_for
from stepwell.testing.lambda_runtime.event_sources import DrainResult
from stepwell.testing.local_infra import LocalInfra, source_root_for
from stepwell.testing.scheduler import SchedulerFirer, VirtualClock

REGION = "us-east-1"
WORKER = "arn:aws:lambda:us-east-1:123456789012:function:w:live"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("3d", 259200), ("1d12h", 129600), ("90m", 5400), ("45s", 45), ("2w", 1209600), ("1.5h", 5400)],
)
def test_durations_are_a_number_and_a_unit(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["3", "3 days", "d3", "3x", "", "1d-2h"])
def test_a_duration_without_a_unit_is_refused_with_examples(text: str) -> None:
    with pytest.raises(LocalError, match=r"a number and a unit, w \(weeks\), d, h, m or s, e.g. 3d"):
        parse_duration(text)


def _run(*arguments: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["local", *arguments], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_advance_without_a_running_stack_says_how_to_start_one(tmp_path: Path) -> None:
    code, _, err = _run("advance", "3d", str(tmp_path))
    assert code == 1
    assert f"nothing runs at {tmp_path}" in err
    assert f"stepwell local up {tmp_path}" in err


def test_advance_of_a_stack_whose_server_died_says_so(tmp_path: Path) -> None:
    LocalState(pid=2**22 + 7, status="ready", root=str(tmp_path), control_url="http://127.0.0.1:9").write(
        state_dir_for(tmp_path)
    )
    code, _, err = _run("advance", "1h", str(tmp_path))
    assert code == 1
    assert "is not running" in err
    assert f"stepwell local down {tmp_path}" in err


def test_down_clears_what_a_dead_server_left_and_says_when_nothing_runs(tmp_path: Path) -> None:
    LocalState(pid=2**22 + 7, status="ready", root=str(tmp_path)).write(state_dir_for(tmp_path))
    code, out, _ = _run("down", str(tmp_path))
    assert (code, out) == (0, f"the local stack of {tmp_path} had already ended (pid {2**22 + 7})\n")
    assert not state_dir_for(tmp_path).exists()
    assert _run("down", str(tmp_path))[:2] == (0, f"nothing runs at {tmp_path}\n")


def test_up_refuses_a_folder_without_terraform_files(tmp_path: Path) -> None:
    code, _, err = _run("up", str(tmp_path))
    assert code == 1
    assert "is not a Terraform root module" in err


def test_the_path_defaults_to_the_one_env_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPWELL_LOCAL_PATH", str(tmp_path / "infra"))
    _, _, err = _run("advance", "1d")
    assert f"nothing runs at {tmp_path / 'infra'}" in err


def test_only_a_live_server_process_counts_as_running() -> None:
    assert not server_running(2**22 + 7)
    assert not server_running(os.getpid())  # alive, but not running the server module


def test_the_tree_copied_with_a_root_module_is_its_git_repository(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "infra" / "prod").mkdir(parents=True)
    (tmp_path / "loose").mkdir()
    assert source_root_for(tmp_path / "repo" / "infra" / "prod") == tmp_path / "repo"
    assert source_root_for(tmp_path / "loose") == tmp_path / "loose"


class FakeRuntime:
    """What LocalInfra asks of the Lambda runtime; the firer's Lambda targets are the test's invoker."""

    def __init__(self) -> None:
        self.background_errors: list[BaseException] = []

    def drain(self) -> DrainResult:
        return DrainResult(settled=True)

    def start(self) -> None:
        return None

    def close(self) -> None:
        return None


def _at(moment: datetime) -> str:
    return f"at({moment.strftime('%Y-%m-%dT%H:%M:%S')})"


def test_advance_fires_each_one_time_schedule_at_its_time_and_those_set_on_the_way() -> None:
    with mock_aws():
        scheduler = boto3.client("scheduler", region_name=REGION)
        scheduler.create_schedule_group(Name="g")
        clock = VirtualClock(frozen_at=datetime(2030, 1, 1, 10, 0, 0, tzinfo=UTC))
        start = clock.now()
        runs: list[tuple[str, datetime]] = []

        def schedule(name: str, expression: str) -> None:
            scheduler.create_schedule(
                GroupName="g",
                Name=name,
                ScheduleExpression=expression,
                FlexibleTimeWindow={"Mode": "OFF"},
                Target={"Arn": WORKER, "RoleArn": "arn:aws:iam::123456789012:role/s", "Input": f'"{name}"'},
            )

        def invoke(target: str, payload: bytes) -> dict[str, Any]:
            name = payload.decode().strip('"')
            runs.append((name, clock.now()))
            if name == "first":  # what the first wake-up ran sets a timer a day on, inside the span
                schedule("set-on-the-way", _at(clock.now() + timedelta(days=1)))
            return {}

        schedule("second", _at(start + timedelta(days=2)))
        schedule("first", _at(start + timedelta(hours=1)))
        schedule("after-the-span", _at(start + timedelta(days=5)))
        schedule("recurring", "rate(5 minutes)")
        firer = SchedulerFirer(
            lambda name: boto3.client(name, region_name=REGION), clock=clock, lambda_invoker=invoke
        )
        report = LocalInfra(FakeRuntime(), firer, clock).advance(timedelta(days=3))  # type: ignore[arg-type]

    one_time = [(name, moment - start) for name, moment in runs if name != "recurring"]
    assert one_time == [
        ("first", timedelta(hours=1)),
        ("set-on-the-way", timedelta(days=1, hours=1)),
        ("second", timedelta(days=2)),
    ]
    assert report.now == start + timedelta(days=3)
    assert report.next_due == start + timedelta(days=5)
    assert report.steps == 3
    assert [each.name for each in report.fired if each.name != "recurring"] == [n for n, _ in one_time]
    # A recurring schedule fires once at each step it is due (not every five minutes of three days).
    assert 1 <= sum(name == "recurring" for name, _ in runs) <= 4
