"""The harness's virtual clock as deployed handlers see it: frozen and advanced by the conformance
runner, written to the file LocalStack's runtime workers read (plugins/localstack), and read there."""

from __future__ import annotations

import importlib.util
import time
from datetime import timedelta
from pathlib import Path
from types import ModuleType

import pytest
from stepwell.testing.scheduler import VirtualClock, write_clock_file

WORKER = Path(__file__).resolve().parents[2] / "plugins" / "localstack" / "stepwell_localstack" / "worker.py"


def _plugin_worker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stepwell_localstack_worker_under_test", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_frozen_clock_moves_only_when_advanced_and_thaws_from_its_reading() -> None:
    clock = VirtualClock()
    clock.freeze()
    frozen = clock.now()
    assert clock.now() == frozen
    clock.advance_seconds(90)
    assert clock.now() - frozen == timedelta(seconds=90)
    assert clock.offset_seconds() >= 89
    clock.thaw()
    assert clock.frozen_at is None
    assert clock.now() - frozen >= timedelta(seconds=90)
    assert clock.offset.total_seconds() >= 89


def test_the_clock_file_holds_the_offset_or_the_frozen_instant(tmp_path: Path) -> None:
    path = tmp_path / "clock"
    clock = VirtualClock(listeners=[write_clock_file(str(path))])
    clock.advance(timedelta(hours=2))
    assert float(path.read_text()) == pytest.approx(7200.0)
    clock.freeze()
    assert path.read_text() == f"at {clock.now_epoch():.6f}"


def test_the_plugin_worker_moves_time_by_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "clock"
    path.write_text("3600")
    monkeypatch.setenv("STEPWELL_CLOCK_OFFSET_FILE", str(path))
    worker = _plugin_worker()
    real_time, real_time_ns = time.time, time.time_ns
    try:
        worker.VirtualTime.install_if_configured()
        worker.VirtualTime.refresh()
        assert time.time() - real_time() == pytest.approx(3600, abs=5)
        path.write_text(f"at {real_time() + 86400:.6f}")
        worker.VirtualTime.refresh()
        assert time.time() - real_time() == pytest.approx(86400, abs=5)
    finally:
        time.time, time.time_ns = real_time, real_time_ns
