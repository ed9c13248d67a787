"""The local Lambda runtime on moto: direct invokes, SQS mappings, batch failures, redrive, isolation."""

from __future__ import annotations

import io
import json
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stepwell.testing.backends import Backend, start_backend
from stepwell.testing.lambda_runtime import LambdaRuntime

HANDLER_SOURCE = """
import json, os, sys, time

def handler(event, context):
    if "Records" not in event:
        if event.get("sleep"):
            time.sleep(event["sleep"])
        if event.get("raise"):
            raise ValueError(event["raise"])
        return {
            "echo": event,
            "greeting": os.environ.get("GREETING"),
            "endpoint": os.environ.get("AWS_ENDPOINT_URL"),
            "function_name": context.function_name,
            "remaining_ms": context.get_remaining_time_in_millis(),
            "stepwell_origin": __import__("stepwell").ORIGIN,
            "pid": os.getpid(),
            "wall_clock": time.time(),
        }
    bodies = [json.loads(record["body"]) for record in event["Records"]]
    print("batch", len(bodies), [body.get("n") for body in bodies])
    if any(body.get("crash") for body in bodies):
        raise RuntimeError("the whole batch fails")
    if any(body.get("malformed_answer") for body in bodies):
        return {"batchItemFailures": [{"itemIdentifier": "not-in-this-batch"}]}
    failures = [
        {"itemIdentifier": record["messageId"]}
        for record, body in zip(event["Records"], bodies)
        if body.get("fail")
    ]
    return {"batchItemFailures": failures}
"""


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def moto_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    with start_backend("moto", log_dir=str(tmp_path_factory.mktemp("moto-runtime"))) as backend:
        yield backend


class Setup:
    """A function with its own work queue and DLQ on moto."""

    def __init__(
        self,
        backend: Backend,
        batch_size: int = 10,
        report_failures: bool = True,
        max_receive_count: int = 3,
        timeout: int = 30,
    ) -> None:
        self.backend = backend
        suffix = uuid.uuid4().hex[:8]
        self.function_name = f"fn-{suffix}"
        iam, sqs, lam = backend.client("iam"), backend.client("sqs"), backend.client("lambda")
        role = iam.create_role(RoleName=f"role-{suffix}", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        self.dlq_url = sqs.create_queue(QueueName=f"dlq-{suffix}")["QueueUrl"]
        dlq_arn = self.queue_arn(self.dlq_url)
        redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive_count)})
        self.queue_url = sqs.create_queue(
            QueueName=f"work-{suffix}", Attributes={"VisibilityTimeout": "600", "RedrivePolicy": redrive}
        )["QueueUrl"]
        lam.create_function(
            FunctionName=self.function_name,
            Runtime="python3.13",
            Role=role,
            Handler="app.handler",
            Code={"ZipFile": _zip({"app.py": HANDLER_SOURCE, "stepwell/__init__.py": 'ORIGIN = "zip"\n'})},
            Environment={"Variables": {"GREETING": "hello"}},
            Timeout=timeout,
        )
        mapping: dict[str, Any] = {
            "EventSourceArn": self.queue_arn(self.queue_url),
            "FunctionName": self.function_name,
            "BatchSize": batch_size,
        }
        if report_failures:
            mapping["FunctionResponseTypes"] = ["ReportBatchItemFailures"]
        lam.create_event_source_mapping(**mapping)

    def queue_arn(self, url: str) -> str:
        attributes = self.backend.client("sqs").get_queue_attributes(
            QueueUrl=url, AttributeNames=["QueueArn"]
        )
        return str(attributes["Attributes"]["QueueArn"])

    def send(self, *bodies: dict[str, Any]) -> None:
        for body in bodies:
            self.backend.client("sqs").send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(body))

    def dlq_bodies(self) -> list[dict[str, Any]]:
        sqs = self.backend.client("sqs")
        messages = sqs.receive_message(QueueUrl=self.dlq_url, MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(message["Body"]) for message in messages]

    def runtime(self, tmp_path: Path) -> LambdaRuntime:
        return LambdaRuntime(
            self.backend.client,
            self.backend.lambda_code,
            self.backend.environment(),
            tmp_path,
            region=self.backend.region,
            function_names=[self.function_name],
        )


def test_invoke_runs_the_deployed_code_with_the_function_environment(
    moto_backend: Backend, tmp_path: Path
) -> None:
    setup = Setup(moto_backend)
    with setup.runtime(tmp_path) as runtime:
        result = runtime.invoke(setup.function_name, {"hello": "world"})
        again = runtime.invoke(setup.function_name, b'{"second": true}')
    assert result.succeeded, result.error
    assert result.payload["echo"] == {"hello": "world"}
    assert result.payload["greeting"] == "hello"
    assert result.payload["endpoint"] == moto_backend.endpoint_url
    assert result.payload["function_name"] == setup.function_name
    assert 0 < result.payload["remaining_ms"] <= 30_000
    # The function's own packaged modules win over the harness's installed ones.
    assert result.payload["stepwell_origin"] == "zip"
    # One warm worker served both invocations.
    assert again.payload["echo"] == {"second": True}
    assert again.payload["pid"] == result.payload["pid"]


def test_a_raised_error_is_the_invocations_function_error(moto_backend: Backend, tmp_path: Path) -> None:
    setup = Setup(moto_backend)
    with setup.runtime(tmp_path) as runtime:
        result = runtime.invoke(setup.function_name, {"raise": "bad input 42"})
    assert not result.succeeded
    assert result.error is not None
    assert result.error["errorType"] == "ValueError"
    assert result.error["errorMessage"] == "bad input 42"


def test_the_function_timeout_is_enforced(moto_backend: Backend, tmp_path: Path) -> None:
    setup = Setup(moto_backend, timeout=1)
    with setup.runtime(tmp_path) as runtime:
        before = runtime.invoke(setup.function_name, {"before": "timeout"})
        slow = runtime.invoke(setup.function_name, {"sleep": 30})
        after = runtime.invoke(setup.function_name, {"after": "timeout"})
    assert slow.error is not None
    assert slow.error["errorType"] == "Sandbox.Timedout"
    assert before.succeeded and after.succeeded
    assert after.payload["pid"] != before.payload["pid"]  # a fresh worker replaced the killed one


def test_partial_batch_failures_keep_only_failed_items_until_they_redrive(
    moto_backend: Backend, tmp_path: Path
) -> None:
    setup = Setup(moto_backend, batch_size=4, max_receive_count=3)
    setup.send(*({"n": n, "fail": n == 2} for n in range(7)))
    with setup.runtime(tmp_path) as runtime:
        outcome = runtime.drain()
        log = runtime.log_path(setup.function_name).read_text()
    assert outcome.settled
    # 7 first deliveries in batches of at most 4, then the failing message twice more (3 receives).
    assert outcome.messages == 9
    assert outcome.failed_messages == 3
    batch_sizes = [int(line.split()[1]) for line in log.splitlines() if line.startswith("batch ")]
    assert max(batch_sizes) == 4
    assert setup.dlq_bodies() == [{"n": 2, "fail": True}]


def test_an_error_fails_the_whole_batch(moto_backend: Backend, tmp_path: Path) -> None:
    setup = Setup(moto_backend, batch_size=10, max_receive_count=2)
    setup.send({"n": 1}, {"n": 2, "crash": True})
    with setup.runtime(tmp_path) as runtime:
        outcome = runtime.drain()
    assert outcome.settled
    assert outcome.errors and outcome.errors[0]["errorType"] == "RuntimeError"
    assert sorted(body["n"] for body in setup.dlq_bodies()) == [1, 2]


def test_an_unknown_item_identifier_fails_the_whole_batch(moto_backend: Backend, tmp_path: Path) -> None:
    setup = Setup(moto_backend, max_receive_count=1)
    setup.send({"n": 1}, {"n": 2, "malformed_answer": True})
    with setup.runtime(tmp_path) as runtime:
        outcome = runtime.drain()
    assert outcome.settled
    assert sorted(body["n"] for body in setup.dlq_bodies()) == [1, 2]


def test_without_report_batch_item_failures_a_returned_list_is_ignored(
    moto_backend: Backend, tmp_path: Path
) -> None:
    setup = Setup(moto_backend, report_failures=False, max_receive_count=1)
    setup.send({"n": 1, "fail": True})
    with setup.runtime(tmp_path) as runtime:
        outcome = runtime.drain()
    assert outcome.settled
    assert outcome.failed_messages == 0
    assert setup.dlq_bodies() == []


def test_a_disabled_mapping_is_not_polled(moto_backend: Backend, tmp_path: Path) -> None:
    setup = Setup(moto_backend)
    lam = moto_backend.client("lambda")
    mapping = lam.list_event_source_mappings(FunctionName=setup.function_name)["EventSourceMappings"][0]
    lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
    setup.send({"n": 1})
    with setup.runtime(tmp_path) as runtime:
        assert runtime.poll_once().messages == 0
    visible = moto_backend.client("sqs").get_queue_attributes(
        QueueUrl=setup.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )
    assert visible["Attributes"]["ApproximateNumberOfMessages"] == "1"


def test_background_mode_handles_messages_until_stopped(moto_backend: Backend, tmp_path: Path) -> None:
    setup = Setup(moto_backend)
    with setup.runtime(tmp_path) as runtime:
        runtime.start()
        setup.send({"n": 1}, {"n": 2})
        sqs = moto_backend.client("sqs")
        deadline = time.monotonic() + 60
        while True:
            counts = sqs.get_queue_attributes(
                QueueUrl=setup.queue_url,
                AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
            )["Attributes"]
            if runtime.invocations and not any(int(value) for value in counts.values()):
                break
            assert time.monotonic() < deadline, "the background poller never handled the messages"
            time.sleep(0.1)
        runtime.stop()
    assert not runtime.background_errors
    assert runtime.invocations
    assert all(result.payload == {"batchItemFailures": []} for result in runtime.invocations)
    assert setup.dlq_bodies() == []


def test_a_clock_offset_moves_the_handlers_wall_clock_only(moto_backend: Backend, tmp_path: Path) -> None:
    setup = Setup(moto_backend, timeout=30)
    three_days = 3 * 24 * 3600.0
    runtime = LambdaRuntime(
        moto_backend.client,
        moto_backend.lambda_code,
        moto_backend.environment(),
        tmp_path,
        region=moto_backend.region,
        clock_offset=lambda: three_days,
    )
    with runtime:
        before = time.time()
        result = runtime.invoke(setup.function_name, {"what": "time"})
    assert result.succeeded, result.error
    assert result.payload["wall_clock"] >= before + three_days
    assert 0 < result.payload["remaining_ms"] <= 30_000  # the deadline stays in real time
