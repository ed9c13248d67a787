"""Queue and mapping helpers the deployed tests share."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from stepwell.testing.backends import Backend
from stepwell.testing.deployed_fixtures import event_source_mappings_for

WAIT_SECONDS = 180.0
MAPPING_POLL_SETTLE_SECONDS = 3.0


@contextmanager
def short_visibility(backend: Backend, queue_url: str, seconds: int, function_name: str) -> Iterator[None]:
    """Failed messages return after the queue's visibility timeout (360 s in the example): shorten it for
    the test so the backend's own poller retries and redrives quickly; restore it so plans stay clean.

    A poller already waiting in a long-poll receive keeps the visibility timeout it asked with, so on a
    backend whose own mapping polls, the mapping is paused while the timeout changes: its next receive
    then hides a failed message for ``seconds``, not for the old 360."""
    sqs = backend.client("sqs")
    original = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["VisibilityTimeout"])[
        "Attributes"
    ]["VisibilityTimeout"]
    if backend.runs_lambda_code:
        set_mapping_enabled(backend, function_name, False)
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"VisibilityTimeout": str(seconds)})
    if backend.runs_lambda_code:
        set_mapping_enabled(backend, function_name, True)
    try:
        yield
    finally:
        sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"VisibilityTimeout": original})


def set_mapping_enabled(backend: Backend, function_name: str, enabled: bool) -> None:
    lam = backend.client("lambda")
    [mapping] = event_source_mappings_for(backend, function_name)
    lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=enabled)
    wanted = "Enabled" if enabled else "Disabled"
    deadline = time.monotonic() + WAIT_SECONDS
    while lam.get_event_source_mapping(UUID=mapping["UUID"])["State"] != wanted:
        assert time.monotonic() < deadline, f"the event source mapping never became {wanted}"
        time.sleep(0.5)
    if not enabled and backend.runs_lambda_code:
        # A receive the backend's poller sent before the pause can still take a message: its long poll
        # lasts up to the mapping's batching window (1 s here). Let it return first.
        time.sleep(MAPPING_POLL_SETTLE_SECONDS)


def take_marked(
    backend: Backend, queue_url: str, marker: str, expected: int, wait_seconds: float = WAIT_SECONDS
) -> list[str]:
    """Bodies carrying ``marker`` on the queue (deleted once read; others are made visible again at once);
    waits until ``expected`` arrived or ``wait_seconds`` passed."""
    sqs = backend.client("sqs")
    found: list[str] = []
    deadline = time.monotonic() + wait_seconds
    while len(found) < expected and time.monotonic() < deadline:
        for message in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get(
            "Messages", []
        ):
            if marker in message["Body"]:
                found.append(message["Body"])
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            else:
                sqs.change_message_visibility(
                    QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
    return found
