"""A start refused under an ended execution's name writes nothing to the payload bucket: no object put,
no copy, no retag, so the ended execution's objects keep their retention clock (issue 37, item 4)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.aws.payloads import execution_folder
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.registry import Registry
from stepwell.errors import ExecutionAlreadyExists
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver

BIG = 240 * 1024  # over the engine's inline limit (offloaded), within the input limit (256 KiB)


@durable_execution
def echo_size(event: dict[str, Any], context: DurableContext) -> int:
    return context.step(lambda _: len(event["blob"]), name="size")


def _objects(deployment: Deployment, execution_id: str) -> dict[str, tuple[Any, str]]:
    """Key -> (LastModified, ETag) of the execution's folder."""
    listing = deployment.clients.s3.list_objects_v2(
        Bucket=deployment.config.payload_bucket, Prefix=execution_folder(execution_id)
    )
    return {item["Key"]: (item["LastModified"], item["ETag"]) for item in listing.get("Contents", [])}


def _tags(deployment: Deployment, key: str) -> list[Any]:
    tagging = deployment.clients.s3.get_object_tagging(Bucket=deployment.config.payload_bucket, Key=key)
    return list(tagging["TagSet"])


def test_a_refused_start_under_an_ended_name_writes_nothing_to_the_bucket(deployment: Deployment) -> None:
    registry = Registry()
    registry.register("echo-size", echo_size)
    clock = VirtualClock()
    client = StepwellClient(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    driver = QueueDriver(deployment, runtime, clock)

    execution_id = client.start_execution("echo-size", {"blob": "a" * BIG}, execution_name="big")
    driver.run_until_quiet()
    assert client.describe_execution(execution_id)["Status"] == "SUCCEEDED"
    before = _objects(deployment, execution_id)
    assert before  # its input at least, retired (tagged) at the end
    tags_before = {key: _tags(deployment, key) for key in before}

    writes: list[str] = []
    deployment.clients.s3.meta.events.register(
        "before-call.s3.*",
        lambda model, **_: writes.append(model.name) if model.name in ("PutObject", "CopyObject") else None,
    )
    time.sleep(1.1)  # S3's LastModified has whole seconds: a write now would move it
    for _ in range(2):  # a caller retrying the refused start
        with pytest.raises(ExecutionAlreadyExists, match="already exists with a different input"):
            client.start_execution("echo-size", {"blob": "b" * BIG}, execution_name="big")
    assert writes == []
    assert _objects(deployment, execution_id) == before
    assert {key: _tags(deployment, key) for key in before} == tags_before

    # The same start again returns the ended execution, writing nothing either.
    assert client.start_execution("echo-size", {"blob": "a" * BIG}, execution_name="big") == execution_id
    assert writes == [] and _objects(deployment, execution_id) == before
