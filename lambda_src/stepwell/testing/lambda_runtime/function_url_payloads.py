"""Function URLs' payload format 2.0: the event Lambda makes of an HTTP request to a function's URL, and
the HTTP answer it makes of the function's result."""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from stepwell.testing.lambda_runtime.functions import InvocationResult

# Headers that describe one connection, not the request: never passed on (the relay and the function URL
# front end set their own).
HOP_BY_HOP_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-authorization", "te", "trailers", "transfer-encoding", "upgrade"}
)
# A request to a function URL: <url-id>.lambda-url.<region>.<domain> (on.aws in AWS and moto).
FUNCTION_URL_HOST = re.compile(r"(?P<url_id>[A-Za-z0-9]+)\.lambda-url\.(?P<region>[a-z0-9-]+)\.[^\s]+")
# Lambda's limit for a synchronous invocation's request payload, which a function URL request is.
FUNCTION_URL_MAX_REQUEST_BYTES = 6 * 1024 * 1024


def function_url_id(function_url: str) -> str:
    """The id of a function URL (its first host label), in lower case as hosts are compared."""
    return urlsplit(function_url).netloc.split(".", 1)[0].lower()


def function_url_event(
    url_id: str,
    method: str,
    path_and_query: str,
    headers: list[tuple[str, str]],
    *,
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
