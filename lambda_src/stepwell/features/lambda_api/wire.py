"""The HTTP side: a function URL event (payload format 2.0) read into a bounded `Request`, the typed reading
of its query strings, headers and JSON body as botocore's REST-JSON protocol writes them, and answers
(`Response`) in the shape the function URL turns into an HTTP response.

Everything a request carries is hostile until checked: sizes are bounded before anything is decoded, and
every refusal is an InvalidParameterValueException (or InvalidRequestContentException for a body that is
no JSON) naming the value and what is allowed.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, unquote

from stepwell.features.lambda_api.errors import ApiError, invalid

# A function URL request's payload is at most 6 MB (Lambda's synchronous invoke limit); so is the answer.
MAX_BODY_BYTES = 6 * 1024 * 1024
MAX_RESPONSE_BYTES = 6 * 1024 * 1024 - 64 * 1024
MAX_PATH_LENGTH = 4096
MAX_QUERY_LENGTH = 8192
MAX_HEADER_LENGTH = 8192
MAX_QUERY_VALUES = 32
# The model's idempotency tokens (ClientToken): printable ASCII without spaces, 1 to 64 characters.
_CLIENT_TOKEN = re.compile(r"[\x21-\x7e]{1,64}")
_HTTP_METHODS = frozenset({"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"})


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


@dataclass(frozen=True)
class Request:
    """One request: the method, the path (percent-decoded once), the query's values in order, the headers
    (lower-case names) and the body's bytes."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    @classmethod
    def from_event(cls, event: object) -> Request:
        if not isinstance(event, Mapping) or event.get("version") != "2.0":
            raise invalid("not a function URL request (payload format 2.0)")
        context = event.get("requestContext")
        http = context.get("http") if isinstance(context, Mapping) else None
        method = http.get("method") if isinstance(http, Mapping) else None
        if not isinstance(method, str) or method.upper() not in _HTTP_METHODS:
            raise invalid(f"unsupported HTTP method {str(method)[:16]!r}")
        raw_path = event.get("rawPath")
        if not isinstance(raw_path, str) or not raw_path.startswith("/"):
            raise invalid("the request has no path")
        if len(raw_path) > MAX_PATH_LENGTH:
            raise invalid(f"the request's path is {len(raw_path)} characters; at most {MAX_PATH_LENGTH}")
        raw_query = event.get("rawQueryString") or ""
        if not isinstance(raw_query, str) or len(raw_query) > MAX_QUERY_LENGTH:
            raise invalid(f"the query string is over {MAX_QUERY_LENGTH} characters")
        try:
            pairs = parse_qsl(
                raw_query, keep_blank_values=True, max_num_fields=MAX_QUERY_VALUES, errors="strict"
            )
        except (ValueError, UnicodeDecodeError):
            raise invalid(
                f"the query string is not percent-encoded UTF-8 of at most {MAX_QUERY_VALUES} values"
            ) from None
        query: dict[str, list[str]] = {}
        for key, value in pairs:
            query.setdefault(key, []).append(value)
        headers = event.get("headers") or {}
        if not isinstance(headers, Mapping):
            raise invalid("the request's headers are not a mapping")
        try:
            # Once: AWS passes the path as sent (percent-encoded), LocalStack decoded; none of the values
            # this endpoint accepts holds a '%', so decoding either once gives the same text.
            path = unquote(raw_path, errors="strict")
        except UnicodeDecodeError:
            raise invalid("the request's path is not percent-encoded UTF-8") from None
        return cls(
            method=method.upper(),
            path=path,
            query=query,
            headers={str(name).lower(): str(value) for name, value in headers.items()},
            body=_body(event),
        )

    # ------------------------------------------------------------------ query strings

    def query_string(self, name: str, max_length: int = 1024) -> str | None:
        values = self.query.get(name)
        if not values:
            return None
        if len(values) > 1:
            raise invalid(f"query parameter {name} is given {len(values)} times; once at most")
        if len(values[0]) > max_length:
            raise invalid(f"{name} is {len(values[0])} characters; at most {max_length}")
        return values[0]

    def query_strings(self, name: str, max_items: int) -> list[str]:
        values = self.query.get(name, [])
        if len(values) > max_items:
            raise invalid(f"{name} lists {len(values)} values; at most {max_items}")
        return values

    def query_bool(self, name: str, default: bool) -> bool:
        value = self.query_string(name, 8)
        if value is None:
            return default
        if value not in ("true", "false"):
            raise invalid(f"{name} must be true or false, got {value!r}")
        return value == "true"

    def query_int(self, name: str, low: int, high: int) -> int | None:
        value = self.query_string(name, 12)
        if value is None:
            return None
        if not (value.isascii() and value.isdigit()) or not low <= int(value) <= high:
            raise invalid(f"{name} must be a whole number from {low} to {high}, got {value!r}")
        return int(value)

    def query_time(self, name: str) -> float | None:
        """A timestamp as botocore writes one in a query string (ISO 8601), or epoch seconds."""
        value = self.query_string(name, 64)
        if value is None:
            return None
        try:
            if value.replace(".", "", 1).isdigit():
                return float(value)
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise invalid(f"{name} must be an ISO 8601 timestamp, got {value!r}") from None
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()

    # ------------------------------------------------------------------ headers and body

    def header(self, name: str, max_length: int = 1024) -> str | None:
        value = self.headers.get(name.lower())
        if value is None or value == "":
            return None
        if len(value) > max_length:
            raise invalid(f"header {name} is {len(value)} characters; at most {max_length}")
        return value

    def json_body(self, what: str) -> Any:
        """The body as JSON (None when empty). Non-finite numbers are refused: they are no JSON."""
        if not self.body:
            return None
        try:
            return json.loads(self.body.decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError) as error:
            raise ApiError(
                "InvalidRequestContentException", f"Could not parse the {what} as JSON: {error}"
            ) from None

    def json_object(self, what: str) -> dict[str, Any] | None:
        value = self.json_body(what)
        if value is not None and not isinstance(value, dict):
            raise invalid(f"the {what} must be a JSON object, got {type(value).__name__}")
        return value


def _body(event: Mapping[str, Any]) -> bytes:
    body = event.get("body")
    if body is None or body == "":
        return b""
    if not isinstance(body, str):
        raise invalid("the request's body is not text")
    # Bounded before decoding: base64 text is 4/3 of its bytes.
    if len(body) > MAX_BODY_BYTES * 4 // 3 + 4:
        raise ApiError("RequestTooLargeException", f"the request's body is over {MAX_BODY_BYTES} bytes")
    if event.get("isBase64Encoded"):
        try:
            data = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise invalid("the request's body is not valid base64") from None
    else:
        data = body.encode("utf-8", errors="surrogatepass")
    if len(data) > MAX_BODY_BYTES:
        raise ApiError("RequestTooLargeException", f"the request's body is over {MAX_BODY_BYTES} bytes")
    return data


@dataclass
class Response:
    """An answer: status, headers and body (JSON text unless `raw`)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, value: Mapping[str, Any], status: int = 200, **headers: str) -> Response:
        text = json.dumps(_wire_values(value), ensure_ascii=False, allow_nan=False).encode("utf-8")
        return cls(status, text, {"Content-Type": "application/json", **headers})

    @classmethod
    def error(cls, error: ApiError) -> Response:
        body = {"Type": error.kind, "Message": error.message, "message": error.message, "__type": error.code}
        return cls.json(body, error.status, **{"x-amzn-ErrorType": error.code})

    def to_function_url(self) -> dict[str, Any]:
        """The function URL's response shape; a body that is not UTF-8 text goes base64."""
        headers = {"Cache-Control": "no-store", **self.headers}
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError:
            return {
                "statusCode": self.status,
                "headers": headers,
                "body": base64.b64encode(self.body).decode("ascii"),
                "isBase64Encoded": True,
            }
        return {"statusCode": self.status, "headers": headers, "body": text, "isBase64Encoded": False}


def _wire_values(value: Any) -> Any:
    """Timestamps as REST-JSON writes them (epoch seconds); everything else as it is."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, Mapping):
        return {key: _wire_values(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_wire_values(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("a non-finite number in an answer")
    return value


def client_token(body: Mapping[str, Any]) -> str | None:
    """A request body's ClientToken, if it has one; InvalidParameterValueException when it is no token."""
    token = body.get("ClientToken")
    if token is not None and not (isinstance(token, str) and _CLIENT_TOKEN.fullmatch(token)):
        raise invalid("ClientToken must be 1 to 64 printable ASCII characters without spaces")
    return token
