"""tools/throughput.py's arithmetic on a report made here (no run): executions per second from the
records' starts and ends, the delay's percentiles, the ratios to one worker, the settings it runs with."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

from chaos.checks import Report  # noqa: E402
from chaos.delays import DelayParts  # noqa: E402
from chaos.record import Jump, RunData  # noqa: E402
from chaos.settings import Settings  # noqa: E402
from throughput import Measured, measured, parse_workers, ratios, throughput_settings  # noqa: E402


def _measured(workers: int, executions: int, seconds: float) -> Measured:
    return Measured(workers, executions, seconds, 0.0, 0.0, 0.0, 0.0, ())


def test_a_report_gives_executions_per_second_and_the_delays() -> None:
    report = Report(RunData(Settings()))
    # Four executions from 100 to 110 real seconds; a clock skip of 50 s at 105 is left out.
    report.start_times = [100.0, 101.0, 102.0, 103.0]
    report.end_times = [104.0, 106.0 + 50, 108.0 + 50, 110.0 + 50]
    report.data.jumps = [Jump(105.0, 155.0)]
    report.delay_parts = [DelayParts(float(n), (0.0, float(n), 0.0, 0.0, 0.0, 0.0)) for n in range(101)]
    figures = measured(report, workers=2)
    assert figures.seconds == pytest.approx(10.0)
    assert figures.per_second == pytest.approx(0.4)
    assert (figures.delay_p50, figures.delay_p99, figures.queue_p99, figures.batch_p99) == (50, 99, 99, 0)


def test_ratios_are_to_the_one_worker_run() -> None:
    runs = [_measured(1, 100, 50.0), _measured(2, 100, 26.0), _measured(4, 100, 20.0)]
    assert ratios(runs) == {1: 1.0, 2: pytest.approx(50 / 26), 4: pytest.approx(2.5)}
    assert ratios(runs[1:]) == {}


def test_the_runs_inject_no_fault_and_start_the_one_kind() -> None:
    settings = throughput_settings(4, 30, "moto")
    assert (settings.fault_rate, settings.burst_rate, settings.kill_rate, settings.step_kill_rate) == (
        0,
        0,
        0,
        0,
    )
    assert settings.kill_by is None and not settings.duplicates and settings.kinds == ("three_steps",)
    assert parse_workers("1,2,4") == (1, 2, 4)
    with pytest.raises(Exception, match="from 1 to 16"):
        parse_workers("0,2")
