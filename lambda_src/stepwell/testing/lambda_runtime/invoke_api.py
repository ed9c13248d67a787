"""Lambda's API, locally: the HTTP endpoint a ``LambdaRuntime`` serves on 127.0.0.1 (its
``lambda_endpoint_url``, passed to its workers as ``AWS_ENDPOINT_URL_LAMBDA``, so a handler's boto3
Lambda client reaches it).

Invoke: ``POST /2015-03-31/functions/{name, name:qualifier, partial or full ARN}/invocations`` (query
``Qualifier``, header ``X-Amz-Invocation-Type``: RequestResponse, Event (202 at once, then run in a
thread of its own as ``invoke_event`` runs it: retries, event age, on-success and on-failure
destinations), DryRun (204)) runs the addressed version's code on the runtime and answers as Lambda does
(``X-Amz-Executed-Version``, ``x-amzn-RequestId``: the context's request id; a handler error with
``X-Amz-Function-Error: Unhandled`` and the error as the payload; an unknown function or version is
moto's ResourceNotFoundException; a payload over Lambda's quota, 6 MB or 1 MB for an Event invoke, is
RequestEntityTooLargeException). Every other request is relayed unchanged to the backend and its
answer back, so ListVersionsByFunction, GetAlias or DeleteFunction from a handler reach moto.

Function URLs: moto stores a function's URL configuration but serves nothing. This endpoint answers
requests whose Host header is a function URL's host (``<url-id>.lambda-url.<region>.on.aws``, as moto's
FunctionUrl says): it finds the function with that URL (read per request, so a deleted URL is gone at
once), runs it on a payload format 2.0 event and answers with what its result says
(stepwell.testing.lambda_runtime.function_url_payloads). An unknown URL is 403, as in Lambda; an
``AWS_IAM`` URL is always 403 here (no SigV4 check locally); a body over 6 MB is 413.
``stepwell.testing.function_urls`` sends requests there (and to LocalStack, which serves function URLs
itself).
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from botocore.exceptions import ClientError

from stepwell.testing.lambda_runtime.function_url_payloads import (
    FUNCTION_URL_HOST,
    FUNCTION_URL_MAX_REQUEST_BYTES,
    HOP_BY_HOP_HEADERS,
    function_url_event,
    function_url_response,
)
from stepwell.testing.lambda_runtime.functions import (
    FunctionSpec,
    InvalidFunctionReference,
    InvocationResult,
    invocation_arn,
    split_function_reference,
)

INVOKE_PATH = re.compile(r"/2015-03-31/functions/(?P<function>[^/]+)/invocations/?")
INVOCATION_TYPES = ("RequestResponse", "Event", "DryRun")
# Lambda's payload quotas: 6 MB for a synchronous invoke, 1 MB for an asynchronous one (256 KB before
# October 2025); a larger request is refused with RequestEntityTooLargeException (413) and runs nothing.
SYNC_PAYLOAD_LIMIT_BYTES = 6 * 1024 * 1024
ASYNC_PAYLOAD_LIMIT_BYTES = 1024 * 1024
BACKEND_TIMEOUT_SECONDS = 120.0
_URL_ERROR_HEADERS = {"Content-Type": "application/json"}
_ACCESS_DENIED = {"x-amzn-ErrorType": "AccessDeniedException"}


class InvokeApiRuntime(Protocol):
    """What the endpoint asks of the runtime behind it (a ``LambdaRuntime``)."""

    @property
    def backend_endpoint_url(self) -> str | None:
        """Where every request but Invoke and function URLs goes; None: such a request is answered 502."""

    @property
    def background_errors(self) -> list[BaseException]:
        """Where failures of the runtime itself (not of a handler) while answering a request go."""

    def function_spec(self, function_name: str, qualifier: str | None = None) -> FunctionSpec: ...

    def function_url_target(self, url_id: str) -> tuple[FunctionSpec, str, str] | None: ...

    def run(
        self, spec: FunctionSpec, payload: Any, invoked_arn: str, request_id: str | None = None
    ) -> InvocationResult: ...

    def run_in_background(
        self,
        spec: FunctionSpec,
        payload: Any,
        invoked_arn: str,
        qualifier: str | None = None,
        *,
        request_id: str | None = None,
    ) -> None: ...


def start_invoke_api(runtime: InvokeApiRuntime) -> ThreadingHTTPServer:
    """Serve the endpoint for ``runtime`` on a free port of 127.0.0.1, in a daemon thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), invoke_api_handler(runtime))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="stepwell-lambda-invoke-api", daemon=True).start()
    return server


def invoke_api_handler(runtime: InvokeApiRuntime) -> type[BaseHTTPRequestHandler]:
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
                url_id, self.command, self.path, list(self.headers.items()), body=body, source_ip=source_ip
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
            limit = ASYNC_PAYLOAD_LIMIT_BYTES if invocation_type == "Event" else SYNC_PAYLOAD_LIMIT_BYTES
            if len(body) > limit:
                message = f"Request must be smaller than {limit} bytes for the InvokeFunction operation"
                self._error(413, "RequestEntityTooLargeException", message)
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
            invoked_arn = invocation_arn(spec, resolved_qualifier)
            # The invocation's request id: the context's awsRequestId, in every attempt of an Event one, and
            # the requestId of its destination record, as in Lambda.
            request_id = str(uuid.uuid4())
            if invocation_type == "DryRun":
                self._answer(204, b"", {"x-amzn-RequestId": request_id})
                return
            if invocation_type == "Event":
                runtime.run_in_background(spec, event, invoked_arn, resolved_qualifier, request_id=request_id)
                self._answer(202, b"", {"x-amzn-RequestId": request_id})
                return
            result = runtime.run(spec, event, invoked_arn, request_id)
            headers = {
                "Content-Type": "application/json",
                "X-Amz-Executed-Version": spec.version,
                "x-amzn-RequestId": request_id,
            }
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
