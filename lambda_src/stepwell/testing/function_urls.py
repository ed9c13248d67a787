"""Reach deployed Lambda function URLs on a local backend, where their host names resolve nowhere.

A function URL is ``https://<url-id>.lambda-url.<region>.on.aws/`` in AWS (and in moto's answers), and
``http://<url-id>.lambda-url.<region>.<localstack host>/`` on LocalStack. Here no DNS knows those names,
so a request goes to a local gateway with the URL's host in the ``Host`` header, and the gateway routes
it by that header:

- on moto, the harness's local Lambda runtime (``LambdaRuntime.function_url_gateway()``), which runs the
  function on a payload format 2.0 event and answers with its ``statusCode``/``headers``/``body``;
- on LocalStack, LocalStack's own edge port, which serves function URLs itself.

``FunctionUrls(gateway)`` (or ``FunctionUrls.for_backend(backend, runtime)``, or the session fixture
``function_urls``) maps any function URL to what to connect to (``reachable(url)``: the gateway URL with
the URL's path and query, and the ``Host`` header to send) and sends requests (``request(...)``) with no
AWS credentials at all, as a third party on the internet would.
"""

from __future__ import annotations

import http.client
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from stepwell.testing.backends import Backend
from stepwell.testing.lambda_runtime import BackendLambdaDriver, LambdaRuntime

FUNCTION_URL_HOST = re.compile(r"[A-Za-z0-9]+\.lambda-url\.[a-z0-9-]+\.\S+")
REQUEST_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class ReachableUrl:
    """Where a function URL is reachable here: connect to ``url`` and send ``Host: host``."""

    url: str
    host: str


@dataclass(frozen=True)
class FunctionUrlResponse:
    status: int
    headers: dict[str, str]  # names in lower case; repeated headers joined by ", "
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class FunctionUrls:
    """Function URLs of one local backend, reachable through ``gateway`` (``http://host:port``)."""

    def __init__(self, gateway: str) -> None:
        parts = urlsplit(gateway)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"the function URL gateway must be an http(s)://host:port URL, not {gateway!r}")
        self.gateway = f"{parts.scheme}://{parts.netloc}"

    @classmethod
    def for_backend(
        cls, backend: Backend, runtime: LambdaRuntime | BackendLambdaDriver | None
    ) -> FunctionUrls:
        """moto: the harness runtime serves function URLs (pass the runtime that runs the functions);
        LocalStack: its edge port does."""
        if backend.runs_lambda_code:
            return cls(backend.endpoint_url)
        if not isinstance(runtime, LambdaRuntime):
            raise ValueError(
                f"on {backend.name} the harness's LambdaRuntime serves function URLs: pass the runtime "
                "that runs the deployed functions"
            )
        return cls(runtime.function_url_gateway())

    def reachable(self, url: str) -> ReachableUrl:
        """The gateway URL with ``url``'s path and query, and the Host header that names the function URL."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not FUNCTION_URL_HOST.fullmatch(parts.netloc):
            raise ValueError(
                f"{url!r} is not a function URL (http(s)://<url-id>.lambda-url.<region>.<domain>/...)"
            )
        path = parts.path or "/"
        return ReachableUrl(f"{self.gateway}{path}{'?' + parts.query if parts.query else ''}", parts.netloc)

    def request(
        self,
        method: str,
        url: str,
        body: bytes | str = b"",
        headers: dict[str, str] | None = None,
        *,
        timeout_seconds: float = REQUEST_TIMEOUT_SECONDS,
    ) -> FunctionUrlResponse:
        """Send one request to a function URL (no AWS credentials, no signature) and return the answer."""
        target = self.reachable(url)
        parts = urlsplit(target.url)
        connection_type = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        connection = connection_type(parts.netloc, timeout=timeout_seconds)
        payload = body.encode() if isinstance(body, str) else body
        sent = {"Host": target.host, **(headers or {})}
        if payload or method.upper() in ("POST", "PUT", "PATCH"):
            sent.setdefault("Content-Length", str(len(payload)))
        try:
            connection.request(
                method.upper(),
                f"{parts.path}{'?' + parts.query if parts.query else ''}",
                body=payload or None,
                headers=sent,
            )
            response = connection.getresponse()
            answer = response.read()
            received: dict[str, str] = {}
            for name, value in response.getheaders():
                key = name.lower()
                received[key] = f"{received[key]}, {value}" if key in received else value
            return FunctionUrlResponse(response.status, received, answer)
        finally:
            connection.close()

    def post(
        self, url: str, body: bytes | str = b"", headers: dict[str, str] | None = None
    ) -> FunctionUrlResponse:
        return self.request("POST", url, body, headers)
