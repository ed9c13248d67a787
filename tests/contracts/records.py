"""The records the contract tests write: executions of workflow "wf" in domain "default" at NOW."""

from __future__ import annotations

import dataclasses

from stepwell.model import ExecutionRecord, ExecutionStatus

NOW = 1_800_000_000.0


def record(instance: str, workflow: str = "wf", subject: str = "s", created: float = NOW) -> ExecutionRecord:
    execution_id = f"default#{workflow}#{subject}/{instance}"
    return ExecutionRecord(
        execution_id=execution_id,
        domain="default",
        workflow_id=workflow,
        subject_id=subject,
        instance_id=instance,
        execution_name=instance,
        status=ExecutionStatus.RUNNING,
        created_at=created,
        updated_at=created,
    )


def tagged(
    instance: str, tags: dict[str, str], domain: str = "default", created: float = NOW
) -> ExecutionRecord:
    return dataclasses.replace(
        record(instance, created=created),
        execution_id=f"{domain}#wf#s/{instance}",
        domain=domain,
        tags=tags,
    )
