"""A local Lambda runtime for backends that store functions but never run them (moto).

moto marks functions Active, but its event source mappings never poll and its Invoke only echoes.
``LambdaRuntime`` reads each function version's configuration (handler, environment, timeout) and its
SQS event source mappings from the Lambda API, fetches that version's deployed zip, unpacks it, and
runs the handler in a worker subprocess with the function's environment plus the backend's endpoint
and dummy credentials. A worker stays warm across invocations, like a Lambda execution environment,
and is replaced when the code or configuration changes, or after a timeout or crash.

Versions: each published version runs its own code in its own workers (a version busy with one
invocation gets another worker, as Lambda scales out), with ``AWS_LAMBDA_FUNCTION_VERSION`` set to
its number (``$LATEST`` for an unqualified call) and the context's ``invoked_function_arn`` the ARN
it was invoked by. A mapping on an alias (``...:function:name:live``) is resolved on every batch
(GetFunctionConfiguration with the alias as qualifier), so moving the alias moves the next batch.

Lambda's Invoke API, locally: the runtime serves ``lambda_endpoint_url`` (127.0.0.1), passed to its
workers as ``AWS_ENDPOINT_URL_LAMBDA``, so a handler's boto3 Lambda client reaches it. There
``POST /2015-03-31/functions/{name, name:qualifier, partial or full ARN}/invocations`` (query
``Qualifier``, header ``X-Amz-Invocation-Type``: RequestResponse, Event (202, run in the background as
``invoke_event`` runs it), DryRun (204)) runs the addressed version's code here and answers as Lambda does
(``X-Amz-Executed-Version``; a handler error with ``X-Amz-Function-Error: Unhandled`` and the error
as the payload; an unknown function or version is moto's ResourceNotFoundException). Every other
request is relayed unchanged to the backend and its answer back, so ListVersionsByFunction,
GetAlias or DeleteFunction from a handler reach moto.

Function URLs, locally: moto stores a function's URL configuration but serves nothing. The same local
endpoint answers requests whose Host header is a function URL's host (``<url-id>.lambda-url.<region>.
on.aws``, as moto's FunctionUrl says): it finds the function with that URL (GetFunctionUrlConfig, read
per request, so a deleted URL is gone at once), runs it on a payload format 2.0 event (lower-case
headers, cookies apart, the body as text for text content types and base64 otherwise) and answers with
the result's ``statusCode``/``headers``/``cookies``/``body`` (a result without ``statusCode``: 200 with
the result as JSON; a function error: 502). An unknown URL is 403, as in Lambda; an ``AWS_IAM`` URL is
always 403 here (no SigV4 check locally); a body over 6 MB is 413. ``stepwell.testing.function_urls``
sends requests there (and to LocalStack, which serves function URLs itself).

For each mapping it honours the batch size, the batching window (``wait_for_batching_window``),
``ReportBatchItemFailures`` (only the reported items stay on the queue; a malformed response fails
the whole batch, as Lambda does), and a raised error or timeout failing the whole batch. SQS itself
keeps received messages invisible and moves them to the DLQ after ``maxReceiveCount`` receives (moto
does that on receive). With ``fast_retries`` (the default) the runtime ends the visibility timeout
of failed messages at once, as if it had passed, so tests see retries and redrive without waiting.

With ``clock_offset`` (a callable returning seconds, e.g. the scheduler firer's virtual-clock offset),
each invocation's handler sees ``time.time()`` moved by that offset, so an engine woken by a
fast-forwarded schedule finds its timer due (the context's remaining time stays real).

Asynchronous invocations (an Event invoke, a Scheduler target): ``invoke_event`` runs the event, and
when the function fails runs it again up to the MaximumRetryAttempts of the version's or alias's event
invoke config (GetFunctionEventInvokeConfig; default 2), then sends Lambda's destination record to its
on-failure SQS destination, if any (stepwell.testing.async_invoke), without Lambda's waits between.

Use ``poll_once()``, ``drain()`` (until the mapped queues settle, bounded by batches and seconds),
``start()``/``stop()`` (a background thread), ``invoke(function_name, payload, qualifier=None)`` and
``invoke_event(...)``.

The worker side of this module runs as ``python -P lambda_runtime.py --worker CODE_DIR HANDLER`` with
the interpreter running the harness (it provides boto3, as Lambda's runtime does).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import http.client
import io
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from stepwell.testing.async_invoke import AsyncInvokeOutcome

ClientFactory = Callable[[str], Any]
CodeFetcher = Callable[[str], bytes]

WORKER_START_TIMEOUT_SECONDS = 60.0
IDLE_POLL_SECONDS = 0.2
SQS_MAX_RECEIVE = 10
LATEST = "$LATEST"
INVOKE_PATH = re.compile(r"/2015-03-31/functions/(?P<function>[^/]+)/invocations/?")
INVOCATION_TYPES = ("RequestResponse", "Event", "DryRun")
# Headers that describe one connection, not the request: the relay sets its own.
HOP_BY_HOP_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-authorization", "te", "trailers", "transfer-encoding", "upgrade"}
)
BACKEND_TIMEOUT_SECONDS = 120.0
# A request to a function URL: <url-id>.lambda-url.<region>.<domain> (on.aws in AWS and moto).
FUNCTION_URL_HOST = re.compile(r"(?P<url_id>[A-Za-z0-9]+)\.lambda-url\.(?P<region>[a-z0-9-]+)\.[^\s]+")
# Lambda's limit for a synchronous invocation's request payload, which a function URL request is.
FUNCTION_URL_MAX_REQUEST_BYTES = 6 * 1024 * 1024
_URL_ERROR_HEADERS = {"Content-Type": "application/json"}
_ACCESS_DENIED = {"x-amzn-ErrorType": "AccessDeniedException"}


# ---------------------------------------------------------------------------------------------------
# Worker side: runs inside the subprocess, imports the handler once, serves invocations line by line.


_REAL_TIME = time.time
_REAL_TIME_NS = time.time_ns


class _VirtualTime:
    """Moves the worker's wall clock by the harness's virtual-clock offset, so a deployed engine sees a
    timer the scheduler firer fast-forwarded as due. Installed only when the harness sends an offset."""

    offset_seconds = 0.0
    installed = False

    @classmethod
    def set_offset(cls, seconds: float) -> None:
        cls.offset_seconds = seconds
        if not cls.installed:
            time.time = lambda: _REAL_TIME() + cls.offset_seconds
            time.time_ns = lambda: _REAL_TIME_NS() + int(cls.offset_seconds * 1_000_000_000)
            cls.installed = True


class _LambdaContext:
    """The parts of Lambda's context object handlers use."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.function_name: str = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version: str = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.invoked_function_arn: str = request.get("function_arn", "")
        self.memory_limit_in_mb: str = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        self.aws_request_id: str = request["request_id"]
        self.log_group_name: str = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name: str = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self._deadline_epoch_ms: int = request["deadline_epoch_ms"]

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_epoch_ms - int(_REAL_TIME() * 1000))


def _error_payload(error: BaseException, request_id: str, error_type: str | None = None) -> dict[str, Any]:
    """A function error as Lambda's Python runtime reports it: the handler's frames only (this runner's
    own are noise), each as one ``traceback.format_list`` line."""
    return {
        "errorMessage": str(error),
        "errorType": error_type or type(error).__name__,
        "requestId": request_id,
        "stackTrace": traceback.format_list(
            [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename != __file__]
        ),
    }


def run_worker(code_dir: str, handler_spec: str) -> None:
    """Serve invocations: one JSON request per stdin line, one JSON answer per line on the protocol fd."""
    # The handler's prints go to stderr (the function's log); answers go to a private copy of stdout.
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.path.insert(0, code_dir)
    os.chdir(code_dir)
    handler: Callable[[Any, Any], Any] | None = None
    init_error: dict[str, Any] | None = None
    module_name, _, function_name = handler_spec.rpartition(".")
    try:
        import importlib

        module = importlib.import_module(module_name)
        handler = getattr(module, function_name)
    except BaseException as error:  # any import failure is the function's error, as in Lambda
        init_error = _error_payload(error, "", "Runtime.ImportModuleError")
    protocol.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("clock_offset_seconds") is not None:
            _VirtualTime.set_offset(float(request["clock_offset_seconds"]))
        if init_error is not None or handler is None:
            answer: dict[str, Any] = {"error": {**(init_error or {}), "requestId": request["request_id"]}}
        else:
            try:
                result = handler(request["event"], _LambdaContext(request))
                answer = {"result": result}
            except Exception as error:  # the handler's exception is the invocation's FunctionError
                answer = {"error": _error_payload(error, request["request_id"])}
        try:
            encoded = json.dumps(answer)
        except (TypeError, ValueError) as error:
            marshal_error = _error_payload(error, request["request_id"], "Runtime.MarshalError")
            encoded = json.dumps({"error": marshal_error})
        protocol.write(encoded + "\n")
        sys.stderr.flush()


# ---------------------------------------------------------------------------------------------------
# Harness side.


class InvocationTimeout(RuntimeError):
    pass


@dataclass(frozen=True)
class InvocationResult:
    function_name: str
    payload: Any
    error: dict[str, Any] | None = None  # errorType, errorMessage, stackTrace; None on success
    executed_version: str = LATEST

    @property
    def succeeded(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class FunctionSpec:
    """One version of a function as it runs: ``version`` is a number or ``$LATEST``."""

    name: str
    arn: str  # the unqualified function ARN
    version: str
    handler: str
    timeout_seconds: int
    memory_mb: int
    environment: dict[str, str]
    code_sha256: str
    last_modified: str
    role: str = ""  # the function's execution role ARN


class _Worker:
    def __init__(
        self,
        spec: FunctionSpec,
        code_dir: Path,
        environment: dict[str, str],
        log: IO[bytes],
        python_executable: str,
    ) -> None:
        self.spec = spec
        self.process = subprocess.Popen(
            # -P: run this file as a script without putting its folder on sys.path, so the function's
            # own code (its PYTHONPATH) is what imports see, not the harness package.
            [python_executable, "-P", __file__, "--worker", str(code_dir), spec.handler],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=environment,
            cwd=code_dir,
            text=True,
        )
        ready = self._read_line(WORKER_START_TIMEOUT_SECONDS)
        if ready is None or not json.loads(ready).get("ready"):
            self.kill()
            raise RuntimeError(f"the worker for {spec.name} did not start (see its log)")

    def _read_line(self, timeout_seconds: float) -> str | None:
        assert self.process.stdout is not None
        readable, _, _ = select.select([self.process.stdout], [], [], timeout_seconds)
        if not readable:
            return None
        line = self.process.stdout.readline()
        return line or None

    def invoke(
        self, event: Any, request_id: str, invoked_arn: str, clock_offset_seconds: float | None = None
    ) -> dict[str, Any]:
        assert self.process.stdin is not None
        deadline_ms = int(time.time() * 1000) + self.spec.timeout_seconds * 1000
        request = {
            "event": event,
            "request_id": request_id,
            "deadline_epoch_ms": deadline_ms,
            "function_arn": invoked_arn,
            "clock_offset_seconds": clock_offset_seconds,
        }
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self._read_line(self.spec.timeout_seconds)
        if line is None:
            timed_out = self.process.poll() is None
            self.kill()
            if timed_out:
                raise InvocationTimeout(
                    f"{self.spec.name} timed out after {self.spec.timeout_seconds} s (request {request_id})"
                )
            raise RuntimeError(f"the worker for {self.spec.name} exited with code {self.process.returncode}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


@dataclass(frozen=True)
class EventSourceMapping:
    uuid: str
    function_name: str
    qualifier: str | None  # the alias or version the mapping invokes; None: $LATEST
    queue_arn: str
    batch_size: int
    batching_window_seconds: int
    report_batch_item_failures: bool


@dataclass
class DrainResult:
    batches: int = 0
    messages: int = 0
    failed_messages: int = 0
    settled: bool = False
    errors: list[dict[str, Any]] = field(default_factory=list)


class InvalidFunctionReference(ValueError):
    """A FunctionName or Qualifier Lambda would refuse (InvalidParameterValueException)."""


def split_function_reference(reference: str, qualifier: str | None = None) -> tuple[str, str | None]:
    """(name, qualifier) of a FunctionName as Lambda's Invoke takes it: ``name``, ``name:qualifier``,
    a partial ARN (``account:function:name[:qualifier]``) or a full ARN, plus a separate Qualifier."""
    parts = reference.split(":")
    if parts[0] == "arn" and len(parts) >= 7 and parts[5] == "function":
        parts = parts[6:]
    elif len(parts) >= 3 and parts[1] == "function":
        parts = parts[2:]
    if not parts[0] or len(parts) > 2 or (len(parts) == 2 and not parts[1]):
        raise InvalidFunctionReference(
            f"{reference!r} is not a function name, name:qualifier or function ARN "
            "(arn:aws:lambda:region:account:function:name[:qualifier])"
        )
    in_reference = parts[1] if len(parts) == 2 else None
    if in_reference is not None and qualifier and qualifier != in_reference:
        raise InvalidFunctionReference(
            f"the qualifier in {reference!r} ({in_reference}) does not match the Qualifier {qualifier!r}"
        )
    return parts[0], in_reference or qualifier or None


def _queue_name_and_account(queue_arn: str) -> tuple[str, str]:
    parts = queue_arn.split(":")
    if len(parts) != 6 or parts[2] != "sqs":
        raise ValueError(
            f"event source {queue_arn!r} is not an SQS queue ARN (arn:aws:sqs:region:account:name)"
        )
    return parts[5], parts[4]


def _sqs_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    attributes = {key: str(value) for key, value in message.get("Attributes", {}).items()}
    message_attributes: dict[str, Any] = {}
    for name, value in message.get("MessageAttributes", {}).items():
        binary = value.get("BinaryValue")
        message_attributes[name] = {
            "stringValue": value.get("StringValue"),
            "binaryValue": base64.b64encode(binary).decode() if binary is not None else None,
            "stringListValues": value.get("StringListValues", []),
            "binaryListValues": [
                base64.b64encode(item).decode() for item in value.get("BinaryListValues", [])
            ],
            "dataType": value.get("DataType"),
        }
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": attributes,
        "messageAttributes": message_attributes,
        "md5OfBody": message.get("MD5OfBody", hashlib.md5(message["Body"].encode()).hexdigest()),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def _failed_item_ids(result: InvocationResult, batch_ids: set[str], reports_failures: bool) -> set[str]:
    """Which messages of the batch stay on the queue, following Lambda's rules for SQS."""
    if not result.succeeded:
        return set(batch_ids)
    if not reports_failures:
        return set()
    payload = result.payload
    if (
        payload is None
        or payload == ""
        or (isinstance(payload, dict) and not payload.get("batchItemFailures"))
    ):
        return set()
    if not isinstance(payload, dict) or not isinstance(payload["batchItemFailures"], list):
        return set(batch_ids)
    failed: set[str] = set()
    for item in payload["batchItemFailures"]:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not isinstance(identifier, str) or identifier not in batch_ids:
            return set(batch_ids)  # a malformed or unknown identifier fails the whole batch
        failed.add(identifier)
    return failed


def _url_id(function_url: str) -> str:
    """The id of a function URL (its first host label), in lower case as hosts are compared."""
    return urlsplit(function_url).netloc.split(".", 1)[0].lower()


def _invoked_arn(spec: FunctionSpec, qualifier: str | None) -> str:
    """The ARN an invocation came through, as the context's invoked_function_arn reports it."""
    return f"{spec.arn}:{qualifier}" if qualifier else spec.arn


def function_url_event(
    url_id: str,
    method: str,
    path_and_query: str,
    headers: list[tuple[str, str]],
    body: bytes,
    source_ip: str,
    now: float | None = None,
) -> dict[str, Any]:
    """The event Lambda gives a function for a request to its URL (payload format 2.0): header names in
    lower case, repeated headers joined by commas, cookies apart, the body as text when the content type
    is text and it decodes as UTF-8, else base64 (``isBase64Encoded``); no ``body`` when there is none."""
    raw_path, _, raw_query = path_and_query.partition("?")
    joined: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        key = name.lower()
        if key == "cookie":
            cookies.extend(part.strip() for part in value.split(";") if part.strip())
        elif key not in HOP_BY_HOP_HEADERS:
            joined[key] = f"{joined[key]},{value}" if key in joined else value
    domain = joined.get("host", "").split(":", 1)[0]
    trace_id = f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]}"
    joined.update(
        {
            "x-amzn-tls-cipher-suite": "ECDHE-RSA-AES128-GCM-SHA256",
            "x-amzn-tls-version": "TLSv1.3",
            "x-amzn-trace-id": trace_id,
            "x-forwarded-for": source_ip,
            "x-forwarded-port": "443",
            "x-forwarded-proto": "https",
        }
    )
    query: dict[str, list[str]] = parse_qs(raw_query, keep_blank_values=True)
    moment = time.time() if now is None else now
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path or "/",
        "rawQueryString": raw_query,
        "headers": joined,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": url_id,
            "domainName": domain,
            "domainPrefix": url_id,
            "http": {
                "method": method,
                "path": unquote(raw_path or "/"),
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": joined.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(moment)),
            "timeEpoch": int(moment * 1000),
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        event["queryStringParameters"] = {key: ",".join(values) for key, values in query.items()}
    if body:
        content_type = joined.get("content-type", "").lower()
        textual = content_type.startswith("text/") or any(
            kind in content_type for kind in ("json", "xml", "javascript", "yaml", "x-www-form-urlencoded")
        )
        try:
            text = body.decode("utf-8") if textual else None
        except UnicodeDecodeError:
            text = None
        if text is None:
            event["body"] = base64.b64encode(body).decode()
            event["isBase64Encoded"] = True
        else:
            event["body"] = text
    return event


def function_url_response(result: InvocationResult) -> tuple[int, list[tuple[str, str]], bytes]:
    """The HTTP answer Lambda makes of a function URL invocation's result: a function error is 502; a
    JSON object with ``statusCode`` gives the status, ``headers``, ``cookies`` (Set-Cookie) and ``body``
    (base64-decoded with ``isBase64Encoded``); any other result is a 200 with the result as JSON."""
    bad_gateway = (502, [("Content-Type", "application/json")], b'{"Message":"Internal Server Error"}')
    if result.error is not None:
        return bad_gateway
    payload = result.payload
    if not isinstance(payload, dict) or "statusCode" not in payload:
        return 200, [("Content-Type", "application/json")], json.dumps(payload).encode()
    try:
        status = int(payload["statusCode"])
    except (TypeError, ValueError):
        status = 0
    given = payload.get("headers") or {}
    if not 100 <= status <= 599 or not isinstance(given, dict):
        return bad_gateway
    headers = [
        (str(name), str(value))
        for name, value in given.items()
        if str(name).lower() not in HOP_BY_HOP_HEADERS | {"content-length"}
    ]
    if not any(name.lower() == "content-type" for name, _ in headers):
        headers.insert(0, ("Content-Type", "application/json"))
    headers.extend(("Set-Cookie", str(cookie)) for cookie in payload.get("cookies") or [])
    raw_body = payload.get("body")
    if raw_body is None:
        body = b""
    elif payload.get("isBase64Encoded"):
        body = base64.b64decode(str(raw_body))
    elif isinstance(raw_body, str):
        body = raw_body.encode()
    else:
        body = json.dumps(raw_body).encode()
    return status, headers, body


def _invoke_api_handler(runtime: LambdaRuntime) -> type[BaseHTTPRequestHandler]:
    class LambdaApiHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as botocore expects; every answer has a length

        def _serve(self) -> None:
            url_host = FUNCTION_URL_HOST.match(self.headers.get("Host") or "")
            if url_host is not None:
                self._function_url(url_host["url_id"])
                return
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            target = urlsplit(self.path)
            match = INVOKE_PATH.fullmatch(target.path)
            try:
                if self.command == "POST" and match is not None:
                    qualifier = parse_qs(target.query).get("Qualifier", [None])[0]
                    self._invoke(unquote(match["function"]), qualifier, body)
                else:
                    self._relay(body)
            except Exception as error:  # e.g. the code could not be fetched: answer, as Lambda would
                runtime.background_errors.append(error)
                self._error(500, "ServiceException", f"the local runtime failed: {error!r}")

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _serve

        def _function_url(self, url_id: str) -> None:
            """A request for a function URL: Lambda's front end, as far as an AuthType NONE URL goes."""
            length = int(self.headers.get("Content-Length") or 0)
            if length > FUNCTION_URL_MAX_REQUEST_BYTES:
                self.close_connection = True  # the body stays unread
                message = (
                    f"Request must be smaller than {FUNCTION_URL_MAX_REQUEST_BYTES} bytes "
                    "for the InvokeFunction operation"
                )
                self._answer(413, json.dumps({"Message": message}).encode(), _URL_ERROR_HEADERS)
                return
            body = self.rfile.read(length)
            try:
                target = runtime.function_url_target(url_id)
            except Exception as error:  # the backend could not be asked: Lambda's own failure
                runtime.background_errors.append(error)
                self._answer(500, b'{"Message":"InternalServerError"}', _URL_ERROR_HEADERS)
                return
            if target is None:  # no such URL: Lambda answers 403, as for a URL one may not call
                self._answer(403, b'{"Message":null}', {**_URL_ERROR_HEADERS, **_ACCESS_DENIED})
                return
            spec, invoked_arn, auth_type = target
            if auth_type != "NONE":
                # Requests to an AWS_IAM URL must carry a SigV4 signature for the caller's IAM
                # permissions; the local runtime cannot check one, so it refuses them all.
                self._answer(403, b'{"Message":"Forbidden"}', {**_URL_ERROR_HEADERS, **_ACCESS_DENIED})
                return
            source_ip = str(self.client_address[0])
            event = function_url_event(
                url_id, self.command, self.path, list(self.headers.items()), body, source_ip
            )
            result = runtime.run(spec, event, invoked_arn)
            status, headers, answer = function_url_response(result)
            if self.command == "HEAD":  # the length of the body a GET would have, and no body
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                return
            self._answer(status, answer, headers)

        def _answer(
            self, status: int, body: bytes, headers: dict[str, str] | list[tuple[str, str]] | None = None
        ) -> None:
            self.send_response(status)
            pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
            for name, value in pairs:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, error_type: str, message: str) -> None:
            body = json.dumps({"Type": "User", "message": message}).encode()
            headers = {"Content-Type": "application/json", "x-amzn-ErrorType": error_type}
            self._answer(status, body, headers)

        def _invoke(self, reference: str, qualifier: str | None, body: bytes) -> None:
            invocation_type = self.headers.get("X-Amz-Invocation-Type") or "RequestResponse"
            if invocation_type not in INVOCATION_TYPES:
                message = f"invocation type {invocation_type!r} is not one of {', '.join(INVOCATION_TYPES)}"
                self._error(400, "InvalidParameterValueException", message)
                return
            try:
                name, resolved_qualifier = split_function_reference(reference, qualifier)
                spec = runtime.function_spec(name, resolved_qualifier)
            except InvalidFunctionReference as error:
                self._error(400, "InvalidParameterValueException", str(error))
                return
            except ClientError as error:  # the backend's answer: an unknown function or version
                details = error.response.get("Error", {})
                status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400))
                self._error(status, str(details.get("Code")), str(details.get("Message")))
                return
            try:
                event = json.loads(body or b"{}")
            except ValueError as error:
                self._error(
                    400, "InvalidRequestContentException", f"Could not parse request body into json: {error}"
                )
                return
            invoked_arn = _invoked_arn(spec, resolved_qualifier)
            if invocation_type == "DryRun":
                self._answer(204, b"")
                return
            if invocation_type == "Event":
                runtime.run_in_background(spec, event, invoked_arn, resolved_qualifier)
                self._answer(202, b"")
                return
            result = runtime.run(spec, event, invoked_arn)
            headers = {"Content-Type": "application/json", "X-Amz-Executed-Version": spec.version}
            if result.error is not None:
                headers["X-Amz-Function-Error"] = "Unhandled"
            self._answer(
                200, json.dumps(result.payload if result.succeeded else result.error).encode(), headers
            )

        def _relay(self, body: bytes) -> None:
            if not runtime.backend_endpoint_url:
                self._error(502, "ServiceException", "this runtime knows no backend to relay the request to")
                return
            backend = urlsplit(runtime.backend_endpoint_url)
            connection_type = (
                http.client.HTTPSConnection if backend.scheme == "https" else http.client.HTTPConnection
            )
            connection = connection_type(backend.netloc, timeout=BACKEND_TIMEOUT_SECONDS)
            headers = {
                name: value
                for name, value in self.headers.items()
                if name.lower() not in HOP_BY_HOP_HEADERS | {"host", "content-length"}
            }
            try:
                connection.request(self.command, self.path, body=body if body else None, headers=headers)
                response = connection.getresponse()
                answer = response.read()
            except OSError as error:
                self._error(
                    502, "ServiceException", f"the backend at {runtime.backend_endpoint_url} failed: {error}"
                )
                return
            finally:
                connection.close()
            self.send_response_only(response.status, response.reason)
            for name, value in response.getheaders():
                if name.lower() not in HOP_BY_HOP_HEADERS | {"content-length"}:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the workers' logs say what ran; a line per request is noise

    return LambdaApiHandler


class LambdaRuntime:
    """Runs deployed Python functions and drives their SQS event source mappings."""

    def __init__(
        self,
        client_factory: ClientFactory,
        code_fetcher: CodeFetcher,
        aws_environment: dict[str, str],
        work_dir: str | Path,
        region: str = "us-east-1",
        fast_retries: bool = True,
        wait_for_batching_window: bool = True,
        function_names: list[str] | None = None,
        python_executable: str = sys.executable,
        clock_offset: Callable[[], float] | None = None,
        backend_endpoint_url: str | None = None,
        function_credentials: Callable[[FunctionSpec], Mapping[str, str]] | None = None,
    ) -> None:
        self._client_factory = client_factory
        # Where a handler's credentials come from instead of aws_environment's: on an IAM-enforcing
        # backend, its role's STS session (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN),
        # as Lambda gives a function; asked once per warm worker.
        self.function_credentials = function_credentials
        # Called with "name" for $LATEST and "name:version" for a published version.
        self._code_fetcher = code_fetcher
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
        self._idle_workers: dict[tuple[str, str], list[_Worker]] = {}
        self._busy_workers: set[_Worker] = set()
        # Guards the worker pools and the endpoint only; never held while a handler runs, so a handler
        # may invoke another version (or its own) through the endpoint without waiting on itself.
        self._pool_lock = threading.Lock()
        self._events_in_flight = 0  # Event invocations running in their own threads (run_in_background)
        self._endpoint: ThreadingHTTPServer | None = None
        self._queue_urls: dict[str, str] = {}
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
        request: dict[str, str] = {"FunctionName": function_name}
        if qualifier:
            request["Qualifier"] = qualifier
        configuration = self._client_factory("lambda").get_function_configuration(**request)
        return FunctionSpec(
            name=configuration["FunctionName"],
            arn=":".join(configuration["FunctionArn"].split(":")[:7]),
            version=str(configuration.get("Version") or LATEST),
            handler=configuration["Handler"],
            timeout_seconds=int(configuration.get("Timeout", 3)),
            memory_mb=int(configuration.get("MemorySize", 128)),
            environment={
                key: str(value)
                for key, value in configuration.get("Environment", {}).get("Variables", {}).items()
            },
            code_sha256=configuration.get("CodeSha256", ""),
            last_modified=configuration.get("LastModified", ""),
            role=str(configuration.get("Role", "")),
        )

    def _code_dir(self, spec: FunctionSpec) -> Path:
        digest = hashlib.sha256(spec.code_sha256.encode()).hexdigest()[:16]
        target = self.work_dir / "code" / f"{spec.name}-{digest}"
        if not target.exists():
            archive = self._code_fetcher(
                spec.name if spec.version == LATEST else f"{spec.name}:{spec.version}"
            )
            actual = base64.b64encode(hashlib.sha256(archive).digest()).decode()
            if spec.code_sha256 and actual != spec.code_sha256:
                raise RuntimeError(
                    f"fetched code of {spec.name} version {spec.version} has sha256 {actual}, "
                    f"the function says {spec.code_sha256}"
                )
            staging = target.with_name(target.name + f".{uuid.uuid4().hex}")
            with zipfile.ZipFile(io.BytesIO(archive)) as bundle:
                bundle.extractall(staging)
            try:
                staging.rename(target)
            except OSError:  # another worker of the same code unpacked it first
                if not target.exists():
                    raise
                shutil.rmtree(staging, ignore_errors=True)
        return target

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
            **(self.function_credentials(spec) if self.function_credentials is not None else {}),
        }

    def log_path(self, function_name: str) -> Path:
        """The log every version of the function writes to."""
        return self.work_dir / "logs" / f"{function_name}.log"

    def _checkout_worker(self, spec: FunctionSpec) -> _Worker:
        """An idle warm worker running exactly ``spec``, else a new one."""
        stale: list[_Worker] = []
        found: _Worker | None = None
        with self._pool_lock:
            idle = self._idle_workers.setdefault((spec.name, spec.version), [])
            while idle and found is None:
                candidate = idle.pop()
                if candidate.alive() and candidate.spec == spec:
                    found = candidate
                else:
                    stale.append(candidate)  # the code or configuration changed, or it died
            if found is not None:
                self._busy_workers.add(found)
        for worker in stale:
            worker.kill()
        if found is not None:
            return found
        code_dir = self._code_dir(spec)
        log_path = self.log_path(spec.name)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            environment = self._worker_environment(spec, code_dir)
            worker = _Worker(spec, code_dir, environment, log, self.python_executable)
        with self._pool_lock:
            self._busy_workers.add(worker)
        return worker

    def _checkin_worker(self, worker: _Worker) -> None:
        with self._pool_lock:
            self._busy_workers.discard(worker)
            if worker.alive():
                self._idle_workers.setdefault((worker.spec.name, worker.spec.version), []).append(worker)
                return
        worker.kill()

    def invoke(self, function_name: str, payload: Any, qualifier: str | None = None) -> InvocationResult:
        """Run a function version on ``payload`` (a JSON value, or JSON bytes/str) and return its answer.
        ``function_name`` may be a name, ``name:qualifier`` or an ARN; ``qualifier`` a version or alias."""
        name, resolved_qualifier = split_function_reference(function_name, qualifier)
        spec = self.function_spec(name, resolved_qualifier)
        return self.run(spec, payload, _invoked_arn(spec, resolved_qualifier))

    def run(self, spec: FunctionSpec, payload: Any, invoked_arn: str) -> InvocationResult:
        """Run the version ``spec`` describes, as invoked by ``invoked_arn``."""
        if isinstance(payload, bytes | bytearray):
            payload = json.loads(payload or b"null")
        request_id = str(uuid.uuid4())
        try:
            worker = self._checkout_worker(spec)
        except RuntimeError as error:
            answer: dict[str, Any] = {
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
                self._checkin_worker(worker)
        result = InvocationResult(spec.name, answer.get("result"), answer.get("error"), spec.version)
        self.invocations.append(result)
        return result

    def invoke_event(
        self, function_name: str, payload: Any, qualifier: str | None = None
    ) -> AsyncInvokeOutcome:
        """An asynchronous (Event) invocation, run now in the caller's thread: retried and then sent to its
        on-failure destination as the function's event invoke config says."""
        name, resolved_qualifier = split_function_reference(function_name, qualifier)
        spec = self.function_spec(name, resolved_qualifier)
        return self.run_event(spec, payload, _invoked_arn(spec, resolved_qualifier), resolved_qualifier)

    def run_event(
        self, spec: FunctionSpec, payload: Any, invoked_arn: str, qualifier: str | None
    ) -> AsyncInvokeOutcome:
        # Imported here: this file also runs alone as the worker process, where only the function's
        # package (no stepwell.testing) is importable.
        from stepwell.testing.async_invoke import invoke_asynchronously

        if isinstance(payload, bytes | bytearray):
            payload = json.loads(payload or b"null")
        retries, destination = self._event_invoke_config(spec.name, qualifier)

        def attempt(event: Any) -> dict[str, Any] | None:
            result = self.run(spec, event, invoked_arn)
            if result.succeeded:
                return None
            return result.error or {"errorType": "Unknown", "errorMessage": "no error object"}

        def to_destination(record: dict[str, Any]) -> None:
            self._client_factory("sqs").send_message(
                QueueUrl=self._queue_url(destination), MessageBody=json.dumps(record)
            )

        return invoke_asynchronously(
            attempt, payload, invoked_arn, retries, to_destination if destination else None, spec.version
        )

    def _event_invoke_config(self, function_name: str, qualifier: str | None) -> tuple[int, str]:
        """MaximumRetryAttempts and the on-failure SQS destination ("" = none) of a version or alias."""
        from stepwell.testing.async_invoke import DEFAULT_MAXIMUM_RETRY_ATTEMPTS

        request: dict[str, str] = {"FunctionName": function_name}
        if qualifier:
            request["Qualifier"] = qualifier
        try:
            config = self._client_factory("lambda").get_function_event_invoke_config(**request)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
            return DEFAULT_MAXIMUM_RETRY_ATTEMPTS, ""
        retries = int(config.get("MaximumRetryAttempts", DEFAULT_MAXIMUM_RETRY_ATTEMPTS))
        destination = str(config.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination", ""))
        if destination and not destination.startswith("arn:aws:sqs:"):
            raise ValueError(f"on-failure destination {destination!r}: only SQS queues are played locally")
        return retries, destination

    def run_in_background(
        self, spec: FunctionSpec, payload: Any, invoked_arn: str, qualifier: str | None = None
    ) -> None:
        """``run_event`` in a thread of its own, for an Event invocation: nobody waits for it, so a failure
        to run it at all goes to background_errors. ``drain`` waits for it, as for a queued message."""
        with self._pool_lock:
            self._events_in_flight += 1

        def run() -> None:
            try:
                self.run_event(spec, payload, invoked_arn, qualifier)
            except Exception as error:
                self.background_errors.append(error)
            finally:
                with self._pool_lock:
                    self._events_in_flight -= 1

        threading.Thread(target=run, name="stepwell-event-invoke", daemon=True).start()

    # -- function URLs --------------------------------------------------------------------------------

    def function_url_target(self, url_id: str) -> tuple[FunctionSpec, str, str] | None:
        """The function version a function URL's id addresses, the ARN it is invoked by, and the URL's
        AuthType; None when no function (of ``function_names``, when given) has that URL. The URL
        configuration is read again on each call, so a deleted or replaced URL is seen at once."""
        known = self._url_functions.get(url_id.lower())
        found = self._url_config(known) if known is not None else None
        if found is None or _url_id(found["FunctionUrl"]) != url_id.lower():
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
                    self._url_functions[_url_id(config["FunctionUrl"])] = name
                    if _url_id(config["FunctionUrl"]) == url_id.lower():
                        found = config
        if found is None:
            return None
        name, qualifier = split_function_reference(str(found["FunctionArn"]))
        spec = self.function_spec(name, qualifier)
        return spec, _invoked_arn(spec, qualifier), str(found.get("AuthType") or "")

    def _url_config(self, function_name: str) -> dict[str, Any] | None:
        try:
            config: dict[str, Any] = self._client_factory("lambda").get_function_url_config(
                FunctionName=function_name
            )
        except ClientError as error:
            # Not stepwell.aws.error_code: this module also runs alone as the worker side, without stepwell.
            if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
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
        with self._pool_lock:
            if self._endpoint is None:
                server = ThreadingHTTPServer(("127.0.0.1", 0), _invoke_api_handler(self))
                server.daemon_threads = True
                threading.Thread(
                    target=server.serve_forever, name="stepwell-lambda-invoke-api", daemon=True
                ).start()
                self._endpoint = server
            host, port = self._endpoint.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- event source mappings -----------------------------------------------------------------------

    def event_source_mappings(self) -> list[EventSourceMapping]:
        client = self._client_factory("lambda")
        mappings: list[EventSourceMapping] = []
        for page in client.get_paginator("list_event_source_mappings").paginate():
            for raw in page["EventSourceMappings"]:
                arn = raw.get("EventSourceArn", "")
                if ":sqs:" not in arn or raw.get("State", "Enabled") not in (
                    "Enabled",
                    "Enabling",
                    "Updating",
                ):
                    continue
                function_name, qualifier = split_function_reference(raw["FunctionArn"])
                if self.function_names is not None and function_name not in self.function_names:
                    continue
                mappings.append(
                    EventSourceMapping(
                        uuid=raw["UUID"],
                        function_name=function_name,
                        qualifier=qualifier,
                        queue_arn=arn,
                        batch_size=int(raw.get("BatchSize") or 10),
                        batching_window_seconds=int(raw.get("MaximumBatchingWindowInSeconds") or 0),
                        report_batch_item_failures="ReportBatchItemFailures"
                        in (raw.get("FunctionResponseTypes") or []),
                    )
                )
        return mappings

    def _queue_url(self, queue_arn: str) -> str:
        if queue_arn not in self._queue_urls:
            name, account = _queue_name_and_account(queue_arn)
            response = self._client_factory("sqs").get_queue_url(
                QueueName=name, QueueOwnerAWSAccountId=account
            )
            self._queue_urls[queue_arn] = response["QueueUrl"]
        return self._queue_urls[queue_arn]

    def _receive_batch(self, mapping: EventSourceMapping) -> list[dict[str, Any]]:
        sqs = self._client_factory("sqs")
        queue_url = self._queue_url(mapping.queue_arn)
        window_ends = time.monotonic() + (
            mapping.batching_window_seconds if self.wait_for_batching_window else 0
        )
        messages: list[dict[str, Any]] = []
        while len(messages) < mapping.batch_size:
            response = sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=min(SQS_MAX_RECEIVE, mapping.batch_size - len(messages)),
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
                WaitTimeSeconds=0,
            )
            received = response.get("Messages", [])
            messages.extend(received)
            if not received:
                # Lambda waits out the batching window for a fuller batch, but never with nothing to send.
                if not messages or time.monotonic() >= window_ends:
                    break
                time.sleep(min(IDLE_POLL_SECONDS, max(0.0, window_ends - time.monotonic())))
        return messages

    def process_batch(self, mapping: EventSourceMapping) -> tuple[int, int, InvocationResult | None]:
        """Receive and handle one batch of a mapping; returns (messages, failed messages, result)."""
        messages = self._receive_batch(mapping)
        if not messages:
            return 0, 0, None
        event = {"Records": [_sqs_record(message, mapping.queue_arn, self.region) for message in messages]}
        result = self.invoke(mapping.function_name, event, mapping.qualifier)
        batch_ids = {message["MessageId"] for message in messages}
        failed_ids = _failed_item_ids(result, batch_ids, mapping.report_batch_item_failures)
        sqs = self._client_factory("sqs")
        queue_url = self._queue_url(mapping.queue_arn)
        succeeded = [message for message in messages if message["MessageId"] not in failed_ids]
        failed = [message for message in messages if message["MessageId"] in failed_ids]
        for start in range(0, len(succeeded), SQS_MAX_RECEIVE):
            chunk = succeeded[start : start + SQS_MAX_RECEIVE]
            sqs.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[
                    {"Id": str(index), "ReceiptHandle": m["ReceiptHandle"]} for index, m in enumerate(chunk)
                ],
            )
        if self.fast_retries:
            for start in range(0, len(failed), SQS_MAX_RECEIVE):
                chunk = failed[start : start + SQS_MAX_RECEIVE]
                sqs.change_message_visibility_batch(
                    QueueUrl=queue_url,
                    Entries=[
                        {"Id": str(index), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                        for index, m in enumerate(chunk)
                    ],
                )
        return len(messages), len(failed), result

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
        with self._pool_lock:
            if self._events_in_flight:
                return False
        sqs = self._client_factory("sqs")
        for mapping in self.event_source_mappings():
            attributes = sqs.get_queue_attributes(
                QueueUrl=self._queue_url(mapping.queue_arn),
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                    "ApproximateNumberOfMessagesDelayed",
                ],
            )["Attributes"]
            if any(int(value) for value in attributes.values()):
                return False
        return True

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
        with self._pool_lock:
            endpoint, self._endpoint = self._endpoint, None
            workers = [*self._busy_workers, *(w for idle in self._idle_workers.values() for w in idle)]
            self._busy_workers.clear()
            self._idle_workers.clear()
        if endpoint is not None:
            endpoint.shutdown()
            endpoint.server_close()
        for worker in workers:
            worker.kill()

    def __enter__(self) -> LambdaRuntime:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Stepwell local Lambda runtime worker")
    parser.add_argument("--worker", nargs=2, metavar=("CODE_DIR", "HANDLER"), required=True)
    args = parser.parse_args(argv)
    run_worker(args.worker[0], args.worker[1])


if __name__ == "__main__":
    main()


class BackendLambdaDriver:
    """The same surface as ``LambdaRuntime`` for a backend that runs Lambda code itself (LocalStack with
    Stepwell's runtime-executor plugin): its own event source mappings poll, so ``drain()`` only waits
    for the mapped queues to settle, and ``invoke()`` calls the Lambda API."""

    def __init__(self, client_factory: ClientFactory, function_names: list[str] | None = None) -> None:
        self._client_factory = client_factory
        self.function_names = function_names
        self.invocations: list[InvocationResult] = []
        self._mapping_reader = LambdaRuntime(
            client_factory, lambda name: b"", {}, Path(tempfile.gettempdir()), function_names=function_names
        )

    def invoke(self, function_name: str, payload: Any, qualifier: str | None = None) -> InvocationResult:
        body = payload if isinstance(payload, bytes | bytearray) else json.dumps(payload).encode()
        request: dict[str, Any] = {"FunctionName": function_name, "Payload": bytes(body)}
        if qualifier:
            request["Qualifier"] = qualifier
        response = self._client_factory("lambda").invoke(**request)
        raw = response["Payload"].read()
        decoded = json.loads(raw) if raw else None
        error = decoded if response.get("FunctionError") else None
        executed_version = str(response.get("ExecutedVersion") or LATEST)
        result = InvocationResult(function_name, None if error else decoded, error, executed_version)
        self.invocations.append(result)
        return result

    @property
    def lambda_endpoint_url(self) -> None:
        """None: Lambda requests go to the backend, which runs the code."""
        return None

    def event_source_mappings(self) -> list[EventSourceMapping]:
        return self._mapping_reader.event_source_mappings()

    def poll_once(self) -> DrainResult:
        return DrainResult(settled=self._mapping_reader._queues_settled())

    def drain(self, max_batches: int = 200, timeout_seconds: float = 120.0) -> DrainResult:
        """Wait (up to ``timeout_seconds``) until the backend's mappings have emptied their queues."""
        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            if self._mapping_reader._queues_settled():
                return DrainResult(settled=True)
            time.sleep(IDLE_POLL_SECONDS)
        return DrainResult(settled=False)

    def start(self) -> None:
        """The backend polls by itself."""

    def stop(self) -> None:
        """The backend polls by itself."""

    def close(self) -> None:
        self._mapping_reader.close()
