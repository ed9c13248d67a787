"""``LambdaRuntime``: runs deployed Python and Node.js functions on a backend that stores functions but
never runs them (moto), and drives their SQS event source mappings.

It reads each function version's configuration (handler, environment, timeout) from the Lambda API,
fetches that version's deployed zip, and runs the handler in a warm worker process (pool.py, worker.py)
with the function's environment plus the backend's endpoint and dummy credentials; it serves Lambda's
Invoke API and function URLs locally (invoke_api.py) and polls the mapped queues (event_sources.py).

Versions: each published version runs its own code in its own workers, with
``AWS_LAMBDA_FUNCTION_VERSION`` set to its number (``$LATEST`` for an unqualified call) and the context's
``invoked_function_arn`` the ARN it was invoked by. A mapping on an alias (``...:function:name:live``) is
resolved on every batch (GetFunctionConfiguration with the alias as qualifier), so moving the alias
moves the next batch.

With ``clock_offset`` (a callable returning seconds, e.g. the scheduler firer's virtual-clock offset),
each invocation's handler sees ``time.time()`` moved by that offset, so an engine woken by a
fast-forwarded schedule finds its timer due (the context's remaining time stays real). With
``fast_retries`` (the default) failed messages are received again at once, as if their visibility
timeout had passed, so tests see retries and redrive without waiting.

Node.js versions (Runtime nodejs18.x, 20.x, 22.x) run in warm ``node`` workers (``node_executable``,
default the ``node`` on PATH; node_bootstrap.mjs) with Lambda's Node.js handler resolution, context and
error shapes; ``function_environment`` adds variables to a function's workers last, after the harness's
own (e.g. an ``AWS_ENDPOINT_URL_LAMBDA`` of its own), as ``function_credentials`` does for credentials.

Asynchronous invocations (an Event invoke, a Scheduler target): ``invoke_event`` runs the event, and
when the function fails runs it again up to the MaximumRetryAttempts of the version's or alias's event
invoke config (GetFunctionEventInvokeConfig; default 2) while the event is younger than its
MaximumEventAgeInSeconds, then sends Lambda's destination record to its on-failure SQS destination, if
any; a successful event goes to its on-success destination with the function's answer
(stepwell.testing.async_invoke), without Lambda's waits between. Every attempt has the invocation's
request id (the one the Invoke API answered with), as in Lambda.

Use ``poll_once()``, ``drain()`` (until the mapped queues settle, bounded by batches and seconds),
``start()``/``stop()`` (a background thread), ``invoke(function_name, payload, qualifier=None)`` and
``invoke_event(...)``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from stepwell.aws.clients import error_code
from stepwell.testing.async_invoke import AsyncInvokeOutcome, Attempt, play_event
from stepwell.testing.lambda_runtime.event_sources import (
    IDLE_POLL_SECONDS,
    DrainResult,
    EventSourceMapping,
    MappedQueues,
    failed_item_ids,
    sqs_record,
)
from stepwell.testing.lambda_runtime.function_url_payloads import function_url_id
from stepwell.testing.lambda_runtime.functions import (
    ClientFactory,
    CodeFetcher,
    FunctionSpec,
    InvocationResult,
    RuntimeKind,
    UnsupportedRuntime,
    invocation_arn,
    read_function_spec,
    runtime_kind,
    split_function_reference,
)
from stepwell.testing.lambda_runtime.invoke_api import start_invoke_api
from stepwell.testing.lambda_runtime.invoke_config import EventInvokeConfig, read_event_invoke_config
from stepwell.testing.lambda_runtime.pool import WorkerPool
from stepwell.testing.lambda_runtime.worker import InvocationTimeout


class LambdaRuntime:
    """Runs deployed Python and Node.js functions and drives their SQS event source mappings."""

    def __init__(
        self,
        client_factory: ClientFactory,
        code_fetcher: CodeFetcher,
        aws_environment: dict[str, str],
        work_dir: str | Path,
        *,
        region: str = "us-east-1",
        fast_retries: bool = True,
        wait_for_batching_window: bool = True,
        function_names: list[str] | None = None,
        python_executable: str = sys.executable,
        clock_offset: Callable[[], float] | None = None,
        backend_endpoint_url: str | None = None,
        function_credentials: Callable[[FunctionSpec], Mapping[str, str]] | None = None,
        node_executable: str | None = None,
        function_environment: Callable[[FunctionSpec], Mapping[str, str]] | None = None,
    ) -> None:
        self._client_factory = client_factory
        # Where a handler's credentials come from instead of aws_environment's: on an IAM-enforcing
        # backend, its role's STS session (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN),
        # as Lambda gives a function; asked once per warm worker.
        self.function_credentials = function_credentials
        # Variables a function's workers get last (asked once per warm worker): what Lambda would give it
        # that the harness cannot know, e.g. its own AWS_ENDPOINT_URL_LAMBDA on a local endpoint.
        self.function_environment = function_environment
        # Where Node.js versions run; None (no node on PATH): they fail to start, with that said.
        self.node_executable = node_executable or shutil.which("node")
        self._aws_environment = dict(aws_environment)
        self.work_dir = Path(work_dir)
        self.region = region
        self.fast_retries = fast_retries
        self.wait_for_batching_window = wait_for_batching_window
        self.function_names = function_names
        self.python_executable = python_executable
        self.clock_offset = clock_offset
        # Where the local Invoke API relays every other Lambda request.
        self.backend_endpoint_url = backend_endpoint_url or self._aws_environment.get("AWS_ENDPOINT_URL")
        self._workers = WorkerPool(
            self.work_dir,
            code_fetcher,
            self._worker_environment,
            python_executable,
            node_executable=self.node_executable,
        )
        self._queues = MappedQueues(client_factory, function_names)
        # Guards the endpoint and the count of events in flight only; never held while a handler runs, so
        # a handler may invoke another version (or its own) through the endpoint without waiting on itself.
        self._state_lock = threading.Lock()
        self._events_in_flight = 0  # Event invocations running in their own threads (run_in_background)
        self._endpoint: ThreadingHTTPServer | None = None
        self._url_functions: dict[str, str] = {}  # function URL id (lower case) -> function name
        # One poller at a time: background mode, poll_once and drain take turns.
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.background_errors: list[BaseException] = []
        self.invocations: list[InvocationResult] = []
        self.work_dir.mkdir(parents=True, exist_ok=True)

    # -- functions -----------------------------------------------------------------------------------

    def function_spec(self, function_name: str, qualifier: str | None = None) -> FunctionSpec:
        """The version ``qualifier`` (a number, an alias, ``$LATEST``; None: ``$LATEST``) names, as it
        is now: an alias is resolved by this call, so a moved alias is seen at once."""
        return read_function_spec(self._client_factory("lambda"), function_name, qualifier)

    def _worker_environment(self, spec: FunctionSpec, code_dir: Path) -> dict[str, str]:
        inherited = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TMPDIR") if key in os.environ}
        return {
            **inherited,
            **spec.environment,
            **self._aws_environment,
            "AWS_ENDPOINT_URL_LAMBDA": self.lambda_endpoint_url,
            "PYTHONPATH": str(code_dir),
            "PYTHONUNBUFFERED": "1",
            "LAMBDA_TASK_ROOT": str(code_dir),
            "_HANDLER": spec.handler,
            "AWS_LAMBDA_FUNCTION_NAME": spec.name,
            "AWS_LAMBDA_FUNCTION_VERSION": spec.version,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(spec.timeout_seconds),
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{spec.name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": f"local/[{spec.version}]{uuid.uuid4().hex}",
            **self._runtime_environment(spec, code_dir),
            **(self.function_credentials(spec) if self.function_credentials is not None else {}),
            **(self.function_environment(spec) if self.function_environment is not None else {}),
        }

    @staticmethod
    def _runtime_environment(spec: FunctionSpec, code_dir: Path) -> dict[str, str]:
        """What Lambda's runtime of ``spec`` adds: its name, and for Node.js the function's folder as
        NODE_PATH (CommonJS requires by name find the function's own packages there, as in /var/task)."""
        if not spec.runtime:
            return {}
        extra = {"AWS_EXECUTION_ENV": f"AWS_Lambda_{spec.runtime}"}
        if runtime_kind(spec.runtime) is RuntimeKind.NODE:
            extra["NODE_PATH"] = str(code_dir)
        return extra

    def log_path(self, function_name: str) -> Path:
        """The log every version of the function writes to."""
        return self._workers.log_path(function_name)

    def invoke(self, function_name: str, payload: Any, qualifier: str | None = None) -> InvocationResult:
        """Run a function version on ``payload`` (a JSON value, or JSON bytes/str) and return its answer.
        ``function_name`` may be a name, ``name:qualifier`` or an ARN; ``qualifier`` a version or alias."""
        name, resolved_qualifier = split_function_reference(function_name, qualifier)
        spec = self.function_spec(name, resolved_qualifier)
        return self.run(spec, payload, invocation_arn(spec, resolved_qualifier))

    def run(
        self, spec: FunctionSpec, payload: Any, invoked_arn: str, request_id: str | None = None
    ) -> InvocationResult:
        """Run the version ``spec`` describes, as invoked by ``invoked_arn``, with ``request_id`` as the
        context's request id (None: a new one)."""
        if isinstance(payload, bytes | bytearray):
            payload = json.loads(payload or b"null")
        request_id = request_id or str(uuid.uuid4())
        answer: dict[str, Any]
        try:
            runtime_kind(spec.runtime)
            worker = self._workers.checkout(spec)
        except UnsupportedRuntime as error:  # Lambda's Invoke error for a runtime it cannot run
            answer = {"error": {"errorType": "InvalidRuntimeException", "errorMessage": str(error)}}
        except RuntimeError as error:
            answer = {
                "error": {"errorType": "Runtime.ExitError", "errorMessage": str(error), "stackTrace": []}
            }
        else:
            try:
                offset = self.clock_offset() if self.clock_offset is not None else None
                answer = worker.invoke(payload, request_id, invoked_arn, offset)
            except InvocationTimeout as error:
                answer = {
                    "error": {"errorType": "Sandbox.Timedout", "errorMessage": str(error), "stackTrace": []}
                }
            except RuntimeError as error:
                answer = {
                    "error": {"errorType": "Runtime.ExitError", "errorMessage": str(error), "stackTrace": []}
                }
            finally:
                self._workers.checkin(worker)
        result = InvocationResult(spec.name, answer.get("result"), answer.get("error"), spec.version)
        self.invocations.append(result)
        return result

    def invoke_event(
        self, function_name: str, payload: Any, qualifier: str | None = None
    ) -> AsyncInvokeOutcome:
        """An asynchronous (Event) invocation, run now in the caller's thread: retried and then sent to its
        destinations as the function's event invoke config says."""
        name, resolved_qualifier = split_function_reference(function_name, qualifier)
        spec = self.function_spec(name, resolved_qualifier)
        return self.run_event(spec, payload, invocation_arn(spec, resolved_qualifier), resolved_qualifier)

    def event_invoke_config(self, function_name: str, qualifier: str | None = None) -> EventInvokeConfig:
        """The event invoke config of a version or alias, read now from the backend."""
        return read_event_invoke_config(self._client_factory("lambda"), function_name, qualifier)

    def run_event(
        self,
        spec: FunctionSpec,
        payload: Any,
        invoked_arn: str,
        qualifier: str | None,
        *,
        request_id: str | None = None,
    ) -> AsyncInvokeOutcome:
        """Play an Event invocation of ``spec`` (``request_id``: the one its Invoke answered with)."""
        if isinstance(payload, bytes | bytearray):
            payload = json.loads(payload or b"null")
        config = self.event_invoke_config(spec.name, qualifier)
        request_id = request_id or str(uuid.uuid4())

        def attempt(event: Any) -> Attempt:
            result = self.run(spec, event, invoked_arn, request_id)
            if result.succeeded:
                return Attempt(payload=result.payload)
            return Attempt(error=result.error or {"errorType": "Unknown", "errorMessage": "no error object"})

        def sender(queue_arn: str) -> Callable[[dict[str, Any]], None] | None:
            if not queue_arn:
                return None

            def send(record: dict[str, Any]) -> None:
                self._client_factory("sqs").send_message(
                    QueueUrl=self._queues.queue_url(queue_arn), MessageBody=json.dumps(record)
                )

            return send

        return play_event(
            attempt,
            payload,
            # The record names what ran: the alias or version invoked, else the unqualified call's $LATEST.
            invoked_arn if qualifier else spec.qualified_arn,
            maximum_retry_attempts=config.maximum_retry_attempts,
            maximum_event_age_seconds=config.maximum_event_age_seconds,
            on_success=sender(config.on_success),
            on_failure=sender(config.on_failure),
            executed_version=spec.version,
            request_id=request_id,
        )

    def run_in_background(
        self,
        spec: FunctionSpec,
        payload: Any,
        invoked_arn: str,
        qualifier: str | None = None,
        *,
        request_id: str | None = None,
    ) -> None:
        """``run_event`` in a thread of its own, for an Event invocation: nobody waits for it, so a failure
        to run it at all goes to background_errors. ``drain`` waits for it, as for a queued message."""
        with self._state_lock:
            self._events_in_flight += 1

        def run() -> None:
            try:
                self.run_event(spec, payload, invoked_arn, qualifier, request_id=request_id)
            except Exception as error:
                self.background_errors.append(error)
            finally:
                with self._state_lock:
                    self._events_in_flight -= 1

        threading.Thread(target=run, name="stepwell-event-invoke", daemon=True).start()

    # -- function URLs --------------------------------------------------------------------------------

    def function_url_target(self, url_id: str) -> tuple[FunctionSpec, str, str] | None:
        """The function version a function URL's id addresses, the ARN it is invoked by, and the URL's
        AuthType; None when no function (of ``function_names``, when given) has that URL. The URL
        configuration is read again on each call, so a deleted or replaced URL is seen at once."""
        known = self._url_functions.get(url_id.lower())
        found = self._url_config(known) if known is not None else None
        if found is None or function_url_id(found["FunctionUrl"]) != url_id.lower():
            found = None
            client = self._client_factory("lambda")
            for page in client.get_paginator("list_functions").paginate():
                for function in page["Functions"]:
                    name = str(function["FunctionName"])
                    if self.function_names is not None and name not in self.function_names:
                        continue
                    config = self._url_config(name)
                    if config is None:
                        continue
                    self._url_functions[function_url_id(config["FunctionUrl"])] = name
                    if function_url_id(config["FunctionUrl"]) == url_id.lower():
                        found = config
        if found is None:
            return None
        name, qualifier = split_function_reference(str(found["FunctionArn"]))
        spec = self.function_spec(name, qualifier)
        return spec, invocation_arn(spec, qualifier), str(found.get("AuthType") or "")

    def _url_config(self, function_name: str) -> dict[str, Any] | None:
        try:
            config: dict[str, Any] = self._client_factory("lambda").get_function_url_config(
                FunctionName=function_name
            )
        except ClientError as error:
            if error_code(error) == "ResourceNotFoundException":
                return None
            raise
        return config

    def function_url_gateway(self) -> str:
        """Where requests for the deployed function URLs go on this runtime (its local endpoint, which
        routes by the Host header ``<url-id>.lambda-url.<region>....``)."""
        return self.lambda_endpoint_url

    # -- the local Invoke API ------------------------------------------------------------------------

    @property
    def lambda_endpoint_url(self) -> str:
        """Lambda's API on 127.0.0.1: Invoke runs here, everything else goes to the backend.
        Started on first use."""
        with self._state_lock:
            if self._endpoint is None:
                self._endpoint = start_invoke_api(self)
            host, port = self._endpoint.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- event source mappings -----------------------------------------------------------------------

    def event_source_mappings(self) -> list[EventSourceMapping]:
        return self._queues.mappings()

    def process_batch(self, mapping: EventSourceMapping) -> tuple[int, int, InvocationResult | None]:
        """Receive and handle one batch of a mapping; returns (messages, failed messages, result)."""
        messages = self._queues.receive_batch(mapping, self.wait_for_batching_window)
        if not messages:
            return 0, 0, None
        event = {"Records": [sqs_record(message, mapping.queue_arn, self.region) for message in messages]}
        result = self.invoke(mapping.function_name, event, mapping.qualifier)
        batch_ids = {message["MessageId"] for message in messages}
        failed_ids = failed_item_ids(result, batch_ids, mapping.report_batch_item_failures)
        failed = self._queues.settle_batch(mapping, messages, failed_ids, release_failed=self.fast_retries)
        return len(messages), failed, result

    def poll_once(self) -> DrainResult:
        """One batch from each mapped queue."""
        outcome = DrainResult()
        with self._lock:
            for mapping in self.event_source_mappings():
                handled, failed, result = self.process_batch(mapping)
                if handled:
                    outcome.batches += 1
                    outcome.messages += handled
                    outcome.failed_messages += failed
                    if result is not None and result.error is not None:
                        outcome.errors.append(result.error)
        return outcome

    def _queues_settled(self) -> bool:
        with self._state_lock:
            if self._events_in_flight:
                return False
        return self._queues.empty()

    def drain(self, max_batches: int = 200, timeout_seconds: float = 120.0) -> DrainResult:
        """Handle batches until every mapped queue is empty (nothing visible, in flight or delayed),
        or until ``max_batches`` or ``timeout_seconds``; ``settled`` says which."""
        total = DrainResult()
        deadline = time.monotonic() + timeout_seconds
        while total.batches < max_batches and time.monotonic() < deadline:
            outcome = self.poll_once()
            total.batches += outcome.batches
            total.messages += outcome.messages
            total.failed_messages += outcome.failed_messages
            total.errors.extend(outcome.errors)
            if outcome.batches == 0:
                if self._queues_settled():
                    total.settled = True
                    break
                time.sleep(IDLE_POLL_SECONDS)
        return total

    # -- background mode -----------------------------------------------------------------------------

    def start(self) -> None:
        """Poll in a background thread until ``stop()``, like Lambda's pollers."""
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="stepwell-lambda-runtime", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                idle = self.poll_once().batches == 0
            except Exception as error:  # keep polling; the test sees the error list
                self.background_errors.append(error)
                idle = True
            if idle:
                self._stopping.wait(IDLE_POLL_SECONDS)

    def stop(self) -> None:
        if self._thread is not None:
            self._stopping.set()
            self._thread.join()
            self._thread = None

    def close(self) -> None:
        """Stop polling, the Invoke API and every worker."""
        self.stop()
        with self._state_lock:
            endpoint, self._endpoint = self._endpoint, None
        if endpoint is not None:
            endpoint.shutdown()
            endpoint.server_close()
        self._workers.close()

    def __enter__(self) -> LambdaRuntime:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
