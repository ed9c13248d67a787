"""Registering, starting, describing, listing and stopping executions: ids, idempotent starts, the
arguments each call refuses, and what a stop leaves."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import workflows
from local_history import event_types
from stepwell.aws.work_queue import QueueError
from stepwell.errors import ExecutionNotFound, InvalidArgument, InvalidWorkflowName, WorkflowNotFound
from stepwell.memory.store import MemoryExecutionStore
from stepwell.model import ExecutionStatus
from stepwell.testing.local import LocalStepwell


def test_execution_id_is_context_key_and_instance(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    execution_id = stepwell_local.start("greet", {"name": "Ada"}, execution_name="run-1", subject_id="ada")
    assert execution_id == "default#greet#ada/run-1"


def test_start_is_idempotent_on_the_execution_name(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    first = stepwell_local.start("greet", {"name": "Ada"}, execution_name="once")
    second = stepwell_local.start("greet", {"name": "Ada"}, execution_name="once")

    assert first == second
    assert stepwell_local.store.counters["create_execution"] == 2
    # Not run yet: the repeat sends its message again (the first one may be lost), which is harmless.
    assert len(stepwell_local.queue) == 2
    record = stepwell_local.run_to_completion(first)
    assert json.loads(record.result or "null") == "Hello, Ada!"
    assert stepwell_local.start("greet", {"name": "Ada"}, execution_name="once") == first
    assert len(stepwell_local.queue) == 0  # it ran: a repeat sends nothing
    assert event_types(stepwell_local, first).count("ExecutionStarted") == 1


def test_a_start_whose_message_was_lost_is_completed_by_its_retry(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record is written, then sending its first message fails (the caller sees the start fail): the
    caller's retry of the same start sends it, so the execution runs instead of staying RUNNING forever."""
    stepwell_local.register("greet", workflows.greet)
    queue = stepwell_local.engine.queue
    send = queue.enqueue

    def lost(body: Any, delay_seconds: int = 0) -> None:
        raise QueueError("SQS refused the message")

    monkeypatch.setattr(queue, "enqueue", lost)
    with pytest.raises(QueueError):
        stepwell_local.start("greet", {"name": "Bo"}, execution_name="retried")
    monkeypatch.setattr(queue, "enqueue", send)
    execution_id = stepwell_local.start("greet", {"name": "Bo"}, execution_name="retried")
    record = stepwell_local.run_to_completion(execution_id)
    assert json.loads(record.result or "null") == "Hello, Bo!"


def test_stop_ends_the_execution_and_later_messages_do_nothing(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("three_day_wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three_day_wait", None)
    stepwell_local.run_until_idle()

    assert stepwell_local.engine.stop_execution(execution_id) is True
    stepwell_local.run_until_idle()
    assert stepwell_local.engine.stop_execution(execution_id) is False
    history_after_stop = stepwell_local.history(execution_id)
    stepwell_local.worker.run(execution_id)

    assert stepwell_local.record(execution_id).status is ExecutionStatus.STOPPED
    assert history_after_stop[-1]["EventType"] == "ExecutionStopped"
    assert stepwell_local.history(execution_id) == history_after_stop
    assert len(stepwell_local.queue) == 0  # the pending wake-up was cancelled
    # Its log expires with it, from the stop: the batches before the end (the terminal one as written).
    store = stepwell_local.engine.store
    assert isinstance(store, MemoryExecutionStore)
    record = stepwell_local.record(execution_id)
    assert record.ended_at is not None
    # Its start and the stop, which took in the wait's start (carried by the release of the run that
    # armed it).
    expiries = store.batch_expiries(execution_id)
    assert len(expiries) == 2
    assert all(
        at is not None and abs(at - (record.ended_at + store.retention_seconds)) <= 1 for at in expiries
    )


def test_start_rejects_unknown_workflows_and_bad_names(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    with pytest.raises(WorkflowNotFound, match="'nope'"):
        stepwell_local.start("nope", {})
    with pytest.raises(InvalidArgument, match="execution name 'a/b'"):
        stepwell_local.start("greet", {}, execution_name="a/b")
    with pytest.raises(InvalidArgument, match="domain 'x#y'"):
        stepwell_local.start("greet", {}, domain="x#y")
    # A trailing newline made a second execution of the same name (`$` matches before it).
    with pytest.raises(InvalidArgument, match="execution name 'order-7\\\\n'"):
        stepwell_local.start("greet", {}, execution_name="order-7\n")
    with pytest.raises(InvalidArgument, match="subject id 'customer-1\\\\n'"):
        stepwell_local.start("greet", {}, subject_id="customer-1\n")
    with pytest.raises(InvalidWorkflowName, match="workflow name 'greet2\\\\n'"):
        stepwell_local.register("greet2\n", workflows.greet)
    with pytest.raises(InvalidArgument, match="not JSON-serializable"):
        stepwell_local.start("greet", {"when": object()})


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"status": "RUNNING", "limit": 0}, "limit must be a whole number 1..1000, got 0"),
        ({"status": "RUNNING", "limit": 1001}, "got 1001"),
        ({"status": "RUNNING", "limit": "5"}, "got '5'"),
        ({"status": "RUNNING", "limit": 2.5}, "got 2.5"),
        ({"status": "RUNNING", "limit": True}, "got True"),
        ({"status": "RUNNING", "next_token": "zzz"}, "page token 'zzz' is not one this store returned"),
        ({"status": "RUNNING", "next_token": 5}, "page token 5"),
        ({"status": "running"}, "invalid status 'running'; allowed: RUNNING, SUCCEEDED"),
        ({"status": 1}, "invalid status 1"),
        ({"workflow": 5}, "invalid workflow name 5"),
        ({"domain": "a#b"}, "invalid domain 'a#b'"),
        ({"domain": "shop", "subject_id": "c-1\n"}, "invalid subject id"),
        ({}, "needs exactly one of status=, workflow_id= or domain="),
        ({"status": "RUNNING", "domain": "shop"}, "needs exactly one of"),
        ({"subject_id": "c-1"}, "needs exactly one of"),
    ],
)
def test_list_executions_refuses_bad_arguments_naming_them(
    stepwell_local: LocalStepwell, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        stepwell_local.engine.list_executions(**arguments)


def test_describe_and_list_executions(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    first = stepwell_local.start("greet", {"name": "A"}, subject_id="customer-1", domain="shop")
    stepwell_local.run_to_completion(first)
    second = stepwell_local.start("greet", {"name": "B"}, subject_id="customer-2", domain="shop")

    assert stepwell_local.describe(first)["Status"] == "SUCCEEDED"
    assert stepwell_local.describe(second)["Status"] == "RUNNING"
    engine = stepwell_local.engine
    assert [r.execution_id for r in engine.list_executions(domain="shop", subject_id="customer-2").items] == [
        second
    ]
    assert [r.execution_id for r in engine.list_executions(status="SUCCEEDED").items] == [first]
    page = engine.list_executions(workflow="greet", limit=1)
    assert len(page.items) == 1 and page.next_token is not None
    rest = engine.list_executions(workflow="greet", limit=1, next_token=page.next_token)
    assert {page.items[0].execution_id, rest.items[0].execution_id} == {first, second}
    with pytest.raises(InvalidArgument, match="invalid status 'DONE'"):
        engine.list_executions(status="DONE")
    with pytest.raises(ExecutionNotFound):
        stepwell_local.describe("default#greet#x/none")


def test_workflow_modules_from_the_environment_register_their_handlers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from stepwell.core.registry import default_registry, import_workflow_modules

    monkeypatch.setenv("STEPWELL_WORKFLOW_MODULES", "workflow_module_for_import, ")
    try:
        assert import_workflow_modules() == ["workflow_module_for_import"]
        assert "imported-greeting" in default_registry
    finally:
        default_registry.unregister("imported-greeting")
    monkeypatch.setenv("STEPWELL_WORKFLOW_MODULES", "no_such_module_here")
    with pytest.raises(ImportError, match="'no_such_module_here'"):
        import_workflow_modules()
