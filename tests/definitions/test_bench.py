from __future__ import annotations

import importlib.util
import sys

import pytest

from .test_examples import EXAMPLES


def test_bench_runs_and_counts_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    spec = importlib.util.spec_from_file_location("stepwell_example_bench", EXAMPLES / "bench.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    result = bench.run_bench(3)
    # Each event is one message: the worker runs the context it starts to its first wait at once.
    assert result["messages"] == 3 and result["waiting_sample"] == 3
    assert "sqs.SendMessage" not in result["calls"]
    calls = result["calls"]
    # The three events come in one batch: the domain's definitions are read once, each subject's contexts
    # once per event.
    assert calls["dynamodb.Query"] == 1 + 3
    assert calls["scheduler.CreateSchedule"] == 3  # each context's timeout
    assert result["pending_schedules"] == 3
    # Then each subject's `user.activated`, which resumes its context and runs it to the end at once.
    resume = result["resume"]
    assert resume["messages"] == 3 and result["succeeded_sample"] == 3
    assert "sqs.SendMessage" not in resume["calls"]
    assert resume["calls"]["events.PutEvents"] == 3  # each context's execution announces its end
    # Each run that ends a context deletes the timeout it no longer needs.
    assert resume["calls"]["scheduler.DeleteSchedule"] == 3 and resume["pending_schedules"] == 0
    text = bench.markdown(result)
    assert "AWS requests per event that starts a context" in text
    assert "AWS requests per event that resumes a waiting context" in text
    assert "| dynamodb.PutItem |" in text
