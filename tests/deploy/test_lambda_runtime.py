"""The local Lambda runtime on moto: direct invokes, SQS mappings, batch failures, redrive, isolation;
and Lambda versions on both backends: each version's own code, mappings on an alias, qualified and
nested invokes through Lambda's Invoke API."""

from __future__ import annotations

import io
import json
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from stepwell.testing.backends import Backend, start_backend
from stepwell.testing.lambda_runtime import BackendLambdaDriver, LambdaRuntime

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


def _runtime(backend: Backend, work_dir: Path, **options: Any) -> LambdaRuntime:
    """The harness's runtime for functions on ``backend`` (moto)."""
    return LambdaRuntime(
        backend.client, backend.lambda_code, backend.environment(), work_dir, region=backend.region, **options
    )


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
        return _runtime(self.backend, tmp_path, function_names=[self.function_name])


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


def test_an_event_invocation_is_retried_then_sent_to_its_on_failure_destination(
    moto_backend: Backend, tmp_path: Path
) -> None:
    setup = Setup(moto_backend)
    moto_backend.client("lambda").put_function_event_invoke_config(
        FunctionName=setup.function_name,
        MaximumRetryAttempts=1,
        DestinationConfig={"OnFailure": {"Destination": setup.queue_arn(setup.dlq_url)}},
    )
    with setup.runtime(tmp_path) as runtime:
        failed = runtime.invoke_event(setup.function_name, {"raise": "still down"})
        succeeded = runtime.invoke_event(setup.function_name, {"n": 1})
    assert (failed.attempts, failed.sent_to_destination) == (2, True)
    assert (succeeded.attempts, succeeded.sent_to_destination, succeeded.error) == (1, False, None)
    [record] = setup.dlq_bodies()
    assert record["requestPayload"] == {"raise": "still down"}
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 2
    assert record["responsePayload"]["errorType"] == "ValueError"


def test_drain_waits_for_event_invocations_made_through_the_local_invoke_api(
    moto_backend: Backend, tmp_path: Path
) -> None:
    # A client's wake-up is such an invocation: a test that drains and then reads must see its run.
    setup = Setup(moto_backend)
    with setup.runtime(tmp_path) as runtime:
        lambda_api = boto3.client(
            "lambda",
            endpoint_url=runtime.lambda_endpoint_url,
            region_name=moto_backend.region,
            **moto_backend.credentials,
        )
        answer = lambda_api.invoke(
            FunctionName=setup.function_name, InvocationType="Event", Payload=b'{"sleep": 2, "n": 7}'
        )
        assert answer["StatusCode"] == 202
        assert runtime.drain(timeout_seconds=60).settled
        assert [result.payload["echo"] for result in runtime.invocations if result.payload] == [
            {"sleep": 2, "n": 7}
        ]
        assert runtime.background_errors == []


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
    runtime = _runtime(moto_backend, tmp_path, clock_offset=lambda: three_days)
    with runtime:
        before = time.time()
        result = runtime.invoke(setup.function_name, {"what": "time"})
    assert result.succeeded, result.error
    assert result.payload["wall_clock"] >= before + three_days
    assert 0 < result.payload["remaining_ms"] <= 30_000  # the deadline stays in real time


# ---------------------------------------------------------------------------------------------------
# Versions: each published version runs its own code; mappings on an alias follow the alias; Lambda's
# Invoke API (the runtime's local endpoint on moto, LocalStack's own) runs the version it names.

VERSIONED_SOURCE = """
import json, os
import boto3

CODE = {code!r}

def handler(event, context):
    seen = {{
        "code": CODE,
        "env_version": os.environ.get("AWS_LAMBDA_FUNCTION_VERSION"),
        "context_version": context.function_version,
        "invoked_arn": context.invoked_function_arn,
    }}
    if "Records" in event:
        sqs = boto3.client("sqs")
        for record in event["Records"]:
            body = json.loads(record["body"])
            sqs.send_message(QueueUrl=body["report_to"], MessageBody=json.dumps({{**seen, "n": body["n"]}}))
        return {{"batchItemFailures": []}}
    if event.get("raise"):
        raise ValueError(event["raise"])
    if event.get("report_to"):
        boto3.client("sqs").send_message(QueueUrl=event["report_to"], MessageBody=json.dumps(seen))
    if event.get("nested"):
        answer = boto3.client("lambda").invoke(
            FunctionName=context.function_name, Qualifier=event["nested"], Payload=b"{{}}"
        )
        seen["nested"] = json.loads(answer["Payload"].read())
        seen["nested_executed_version"] = answer["ExecutedVersion"]
    return seen
"""


class Versioned:
    """A function with versions 1 (code "one") and 2 (code "two"), the alias ``live`` on version 1, and
    a mapping from a work queue to the alias; the handler reports what ran to a report queue."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        suffix = uuid.uuid4().hex[:8]
        self.name = f"versioned-{suffix}"
        iam, sqs, self.lam = backend.client("iam"), backend.client("sqs"), backend.client("lambda")
        role = iam.create_role(RoleName=f"role-{suffix}", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        self.work_url = sqs.create_queue(QueueName=f"work-{suffix}")["QueueUrl"]
        self.report_url = sqs.create_queue(QueueName=f"report-{suffix}")["QueueUrl"]
        created = self.lam.create_function(
            FunctionName=self.name,
            Runtime="python3.13",
            Role=role,
            Handler="app.handler",
            Code={"ZipFile": self.package("one")},
            Timeout=60,
            Publish=True,
        )
        self.function_arn = ":".join(created["FunctionArn"].split(":")[:7])
        self.wait("1")
        self.lam.get_waiter("function_updated_v2").wait(FunctionName=self.name)
        updated = self.lam.update_function_code(
            FunctionName=self.name, ZipFile=self.package("two"), Publish=True
        )
        assert updated["Version"] == "2"
        self.wait("2")
        self.alias_arn = self.lam.create_alias(FunctionName=self.name, Name="live", FunctionVersion="1")[
            "AliasArn"
        ]
        mapping = self.lam.create_event_source_mapping(
            EventSourceArn=self.queue_arn(self.work_url), FunctionName=self.alias_arn, BatchSize=10
        )
        self.mapping_uuid = mapping["UUID"]
        deadline = time.monotonic() + 120
        while self.lam.get_event_source_mapping(UUID=self.mapping_uuid)["State"] != "Enabled":
            assert time.monotonic() < deadline, "the event source mapping never became Enabled"
            time.sleep(0.5)

    @staticmethod
    def package(code: str) -> bytes:
        return _zip({"app.py": VERSIONED_SOURCE.format(code=code)})

    def wait(self, version: str) -> None:
        self.lam.get_waiter("function_active_v2").wait(FunctionName=self.name, Qualifier=version)

    def queue_arn(self, url: str) -> str:
        attributes = self.backend.client("sqs").get_queue_attributes(
            QueueUrl=url, AttributeNames=["QueueArn"]
        )
        return str(attributes["Attributes"]["QueueArn"])

    def send_work(self, *numbers: int) -> None:
        sqs = self.backend.client("sqs")
        for n in numbers:
            sqs.send_message(
                QueueUrl=self.work_url, MessageBody=json.dumps({"n": n, "report_to": self.report_url})
            )

    def reports(self, expected: int, timeout_seconds: float = 120.0) -> list[dict[str, Any]]:
        sqs = self.backend.client("sqs")
        found: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout_seconds
        while len(found) < expected and time.monotonic() < deadline:
            messages = sqs.receive_message(
                QueueUrl=self.report_url, MaxNumberOfMessages=10, WaitTimeSeconds=1
            )
            for message in messages.get("Messages", []):
                found.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=self.report_url, ReceiptHandle=message["ReceiptHandle"])
        return found

    def close(self) -> None:
        self.lam.delete_event_source_mapping(UUID=self.mapping_uuid)
        self.lam.delete_function(FunctionName=self.name)


@pytest.fixture()
def versioned(
    stepwell_backend: Backend, tmp_path: Path
) -> Iterator[tuple[Versioned, LambdaRuntime | BackendLambdaDriver, Any]]:
    """The function, what runs it (the harness's runtime on moto, LocalStack itself), and a Lambda client
    whose Invoke runs code (the runtime's endpoint on moto, LocalStack's API)."""
    setup = Versioned(stepwell_backend)
    runtime: LambdaRuntime | BackendLambdaDriver
    if stepwell_backend.runs_lambda_code:
        runtime = BackendLambdaDriver(stepwell_backend.client, function_names=[setup.name])
        lambda_api = stepwell_backend.client("lambda")
    else:
        runtime = _runtime(stepwell_backend, tmp_path, function_names=[setup.name])
        lambda_api = boto3.client(
            "lambda",
            endpoint_url=runtime.lambda_endpoint_url,
            region_name=stepwell_backend.region,
            **stepwell_backend.credentials,
        )
    try:
        yield setup, runtime, lambda_api
    finally:
        runtime.close()
        setup.close()


def _drain(runtime: LambdaRuntime | BackendLambdaDriver) -> None:
    assert runtime.drain(timeout_seconds=120).settled


def test_a_mapping_on_an_alias_runs_the_aliased_version_and_follows_the_alias(
    versioned: tuple[Versioned, LambdaRuntime | BackendLambdaDriver, Any],
) -> None:
    setup, runtime, _ = versioned
    setup.send_work(1, 2)
    _drain(runtime)
    first = setup.reports(2)
    assert sorted(report["n"] for report in first) == [1, 2]
    assert {(r["code"], r["env_version"], r["context_version"]) for r in first} == {("one", "1", "1")}
    assert {r["invoked_arn"] for r in first} == {setup.alias_arn}

    setup.lam.update_alias(FunctionName=setup.name, Name="live", FunctionVersion="2")
    setup.send_work(3)
    _drain(runtime)
    [moved] = setup.reports(1)
    assert (moved["n"], moved["code"], moved["env_version"]) == (3, "two", "2")


def test_invoke_runs_the_version_it_names_and_a_handler_can_invoke_another_version(
    versioned: tuple[Versioned, LambdaRuntime | BackendLambdaDriver, Any],
) -> None:
    setup, runtime, lambda_api = versioned
    by_qualifier = lambda_api.invoke(FunctionName=setup.name, Qualifier="1", Payload=b"{}")
    assert by_qualifier["ExecutedVersion"] == "1"
    assert json.loads(by_qualifier["Payload"].read())["code"] == "one"
    by_arn = lambda_api.invoke(FunctionName=f"{setup.function_arn}:2", Payload=b"{}")
    answer = json.loads(by_arn["Payload"].read())
    assert (by_arn["ExecutedVersion"], answer["code"], answer["env_version"]) == ("2", "two", "2")
    assert answer["invoked_arn"] == f"{setup.function_arn}:2"
    by_alias = json.loads(
        lambda_api.invoke(FunctionName=f"{setup.name}:live", Payload=b"{}")["Payload"].read()
    )
    assert (by_alias["code"], by_alias["invoked_arn"]) == ("one", setup.alias_arn)
    latest = lambda_api.invoke(FunctionName=setup.name, Payload=b"{}")
    assert latest["ExecutedVersion"] == "$LATEST"
    assert json.loads(latest["Payload"].read())["env_version"] == "$LATEST"

    # Version 2's handler synchronously invokes version 1 while it runs: two environments at once.
    nested = runtime.invoke(setup.name, {"nested": "1"}, qualifier="2")
    assert nested.succeeded, nested.error
    assert nested.executed_version == "2"
    assert nested.payload["code"] == "two"
    assert nested.payload["nested"]["code"] == "one"
    assert nested.payload["nested_executed_version"] == "1"
    # And its own version: a busy version gets another environment, it does not wait for itself.
    itself = runtime.invoke(setup.name, {"nested": "2"}, qualifier="2")
    assert itself.succeeded, itself.error
    assert itself.payload["nested"]["code"] == "two"


def test_invocation_types_errors_and_unknown_versions_answer_as_lambda_does(
    versioned: tuple[Versioned, LambdaRuntime | BackendLambdaDriver, Any],
) -> None:
    setup, _, lambda_api = versioned
    dry = lambda_api.invoke(FunctionName=setup.name, Qualifier="2", InvocationType="DryRun", Payload=b"{}")
    assert dry["StatusCode"] == 204
    event = json.dumps({"report_to": setup.report_url}).encode()
    queued = lambda_api.invoke(FunctionName=setup.name, Qualifier="2", InvocationType="Event", Payload=event)
    assert queued["StatusCode"] == 202
    [ran] = setup.reports(1)  # the Event invocation ran; the DryRun one did not
    assert (ran["code"], ran["env_version"]) == ("two", "2")
    assert setup.reports(1, timeout_seconds=2) == []

    failed = lambda_api.invoke(FunctionName=setup.name, Qualifier="1", Payload=b'{"raise": "bad 7"}')
    assert failed["FunctionError"] == "Unhandled"
    assert failed["ExecutedVersion"] == "1"
    error = json.loads(failed["Payload"].read())
    assert (error["errorType"], error["errorMessage"]) == ("ValueError", "bad 7")

    with pytest.raises(ClientError) as missing:
        lambda_api.invoke(FunctionName=setup.name, Qualifier="99", Payload=b"{}")
    assert missing.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert "99" in missing.value.response["Error"]["Message"]


def test_the_local_invoke_api_relays_every_other_request_to_moto(
    moto_backend: Backend, tmp_path: Path
) -> None:
    setup = Versioned(moto_backend)
    with _runtime(moto_backend, tmp_path) as runtime:
        through_runtime = boto3.client(
            "lambda",
            endpoint_url=runtime.lambda_endpoint_url,
            region_name=moto_backend.region,
            **moto_backend.credentials,
        )
        relayed = through_runtime.list_versions_by_function(FunctionName=setup.name)["Versions"]
        direct = moto_backend.client("lambda").list_versions_by_function(FunctionName=setup.name)["Versions"]
        assert relayed == direct
        assert [version["Version"] for version in relayed] == ["$LATEST", "1", "2"]
        assert through_runtime.get_alias(FunctionName=setup.name, Name="live")["FunctionVersion"] == "1"
        with pytest.raises(ClientError) as refused:  # moto's errors come back as they are
            through_runtime.get_alias(FunctionName=setup.name, Name="nope")
        assert refused.value.response["Error"]["Code"] == "ResourceNotFoundException"
        # The runtime's workers reach the endpoint through AWS_ENDPOINT_URL_LAMBDA.
        result = runtime.invoke(setup.name, {"nested": "1"}, qualifier="2")
        assert result.payload["nested"]["code"] == "one"
        # Writes are relayed too (the engine deletes idle versions through this endpoint).
        through_runtime.delete_function(FunctionName=setup.name, Qualifier="2")
        remaining = moto_backend.client("lambda").list_versions_by_function(FunctionName=setup.name)
        assert [version["Version"] for version in remaining["Versions"]] == ["$LATEST", "1"]
    setup.close()


def test_versions_keep_their_own_code_and_numbers_are_never_reused_on_moto(moto_backend: Backend) -> None:
    setup = Versioned(moto_backend)
    lam = moto_backend.client("lambda")
    assert b"'one'" in _unzip_app(moto_backend.lambda_code(f"{setup.name}:1"))
    assert b"'two'" in _unzip_app(moto_backend.lambda_code(f"{setup.name}:2"))
    with pytest.raises(ClientError) as aliased:  # Lambda refuses to delete a version an alias points to
        lam.delete_function(FunctionName=setup.name, Qualifier="1")
    assert aliased.value.response["Error"]["Code"] == "ResourceConflictException"
    with pytest.raises(ClientError) as by_alias:  # nor an alias (moto deleted the alias's version)
        lam.delete_function(FunctionName=setup.name, Qualifier="live")
    assert by_alias.value.response["Error"]["Code"] == "InvalidParameterValueException"
    assert [a["Name"] for a in lam.list_aliases(FunctionName=setup.name, FunctionVersion="1")["Aliases"]] == [
        "live"
    ]
    assert lam.list_aliases(FunctionName=setup.name, FunctionVersion="2")["Aliases"] == []
    lam.delete_function(FunctionName=setup.name, Qualifier="2")
    republished = lam.update_function_code(
        FunctionName=setup.name, ZipFile=Versioned.package("three"), Publish=True
    )
    assert republished["Version"] == "3"
    mapping = lam.get_event_source_mapping(UUID=setup.mapping_uuid)
    assert mapping["FunctionArn"] == setup.alias_arn  # not the version the alias pointed to at creation
    setup.close()


def _unzip_app(archive: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(archive)) as bundle:
        return bundle.read("app.py")
