"""Callback URLs: complete a callback with one HTTPS request, without AWS credentials.

The module's `<name>-callbacks` Lambda (handler `stepwell.features.callback_urls.handler`) sits behind a
Lambda
function URL (auth type NONE) and answers payload-format-2.0 events:

- `POST /callbacks/{id}/success`: the body is the result as JSON text (or empty: no result);
- `POST /callbacks/{id}/failure`: the body is a JSON object with optional ErrorType, ErrorMessage,
  ErrorData (strings) and StackTrace (a list of strings), or empty;
- `POST /callbacks/{id}/heartbeat`: an empty body.

Answers: 202 on success; 400 a bad body (naming what is wrong), 401 a missing or bad signature, 404 an
unknown route or callback id, 405 another method on a callback route, 409 a callback already completed
(or timed out) or whose execution has ended, 413 a body over the limit, 500 the signing secret could not
be read. A refused request changes nothing. The body is never echoed back nor logged.

When a signing secret is configured (`STEPWELL_CALLBACK_SECRET_ARN`: a Secrets Manager secret or an SSM
SecureString parameter, read once per container), every request must carry `X-Stepwell-Timestamp` (epoch
seconds, within 300 s of now) and `X-Stepwell-Signature: sha256=<hex HMAC-SHA256(secret,
"<timestamp>.<METHOD>.<path>.<body>")>` (`signature()`): the method as sent ("POST"), the request's path
as sent, without scheme, host or query (`/callbacks/<id>/<outcome>`), then the body's bytes. Signing the
method and path binds a signature to one callback and one outcome. An older signature of
"<timestamp>.<body>" alone is refused (401).

Inside a workflow, `callback_url(callback_id)` gives the URL to hand to a third party; the worker's
`STEPWELL_CALLBACK_URL` (the function URL, set by the module when `callback_urls` is on) is its base.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import boto3

from stepwell.core.engine import Engine, check_error_object
from stepwell.errors import (
    CallbackNotFound,
    ExecutionAlreadyEnded,
    InvalidArgument,
    PayloadTooLarge,
    StepwellError,
)
from stepwell.ports import Clock

logger = logging.getLogger(__name__)

CALLBACK_URL_ENV = "STEPWELL_CALLBACK_URL"
SECRET_ARN_ENV = "STEPWELL_CALLBACK_SECRET_ARN"
MAX_BODY_ENV = "STEPWELL_CALLBACK_MAX_BODY_BYTES"

OUTCOMES = ("success", "failure", "heartbeat")
DEFAULT_MAX_BODY_BYTES = 64 * 1024
# At most the engine's inline limit: a result sent through a URL is never offloaded to the bucket,
# so the callbacks function needs no S3 access.
MAX_BODY_BYTES_LIMIT = 200 * 1024
SIGNATURE_TOLERANCE_SECONDS = 300
TIMESTAMP_HEADER = "x-stepwell-timestamp"
SIGNATURE_HEADER = "x-stepwell-signature"
SIGNATURE_PREFIX = "sha256="

# Callback ids are "cb" + URL-safe base64 (stepwell.core.journal.derived_callback_id, new_callback_id before
# callback keys); anything else is no route.
# Patterns are used with fullmatch and [0-9], never `$` (it matches before a trailing newline) nor `\d`
# (it matches any Unicode digit, which int() or .encode("ascii") then trips over).
_ROUTE = re.compile(r"/callbacks/([A-Za-z0-9_-]{1,256})/([a-z]+)/?")
_SECRETS_ARN = re.compile(r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+")
_PARAMETER_ARN = re.compile(r"arn:aws[a-z-]*:ssm:[a-z0-9-]+:[0-9]{12}:parameter/[A-Za-z0-9/_.-]+")
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_METHOD = re.compile(r"[A-Z]{1,16}")


class CallbackUrlsNotEnabled(StepwellError):
    """callback_url() outside a deployment with callback URLs (the module's `callback_urls`)."""


def callback_url(callback_id: str, outcome: str = "success", environ: Mapping[str, str] | None = None) -> str:
    """The URL a third party POSTs to, to send `outcome` ("success", "failure" or "heartbeat") for the
    callback `callback_id`. Its base is the worker's STEPWELL_CALLBACK_URL."""
    if outcome not in OUTCOMES:
        raise InvalidArgument(f"callback URL outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
    if not isinstance(callback_id, str) or not _ROUTE.fullmatch(f"/callbacks/{callback_id}/{outcome}"):
        raise InvalidArgument(
            f"invalid callback id {callback_id!r}: 1 to 256 letters, digits, '-' or '_' (a callback's id)"
        )
    env = os.environ if environ is None else environ
    base = env.get(CALLBACK_URL_ENV, "")
    if not base:
        raise CallbackUrlsNotEnabled(
            f"callback URLs are not enabled for this deployment ({CALLBACK_URL_ENV} is not set): set the "
            "module's callback_urls = true, or send callbacks with the client or the bus"
        )
    if not base.startswith(("https://", "http://")):
        raise CallbackUrlsNotEnabled(f"{CALLBACK_URL_ENV} must be an http(s) URL, got {base!r}")
    return f"{base.rstrip('/')}/callbacks/{quote(callback_id, safe='')}/{outcome}"


def signature(secret: bytes, timestamp: str, method: str, path: str, *, body: bytes) -> str:
    """The X-Stepwell-Signature header value of a request: HMAC-SHA256(secret,
    "<timestamp>.<METHOD>.<path>.<body>"), hex, after "sha256=". `timestamp` is epoch seconds as text (the
    X-Stepwell-Timestamp header), `method` "POST", `path` the request's path as sent, without scheme, host
    or query (`/callbacks/<id>/<outcome>`: urllib.parse.urlsplit(callback_url(...)).path), `body` its bytes.
    Neither a timestamp, a method nor a callback path holds a ".", so the signed text is unambiguous."""
    if not _TIMESTAMP.fullmatch(timestamp):
        raise InvalidArgument("the signature's timestamp must be epoch seconds (1 to 12 digits 0-9)")
    if not _METHOD.fullmatch(method):
        raise InvalidArgument("the signature's method must be an upper-case HTTP method such as POST")
    if not _ROUTE.fullmatch(path):
        raise InvalidArgument("the signature's path must be a callback path: /callbacks/<id>/<outcome>")
    signed = b".".join((timestamp.encode("ascii"), method.encode("ascii"), path.encode("ascii"), body))
    return SIGNATURE_PREFIX + hmac.new(secret, signed, hashlib.sha256).hexdigest()


def check_secret_arn(arn: str) -> str:
    """A Secrets Manager secret ARN or an SSM parameter ARN; InvalidArgument otherwise."""
    if _SECRETS_ARN.fullmatch(arn) or _PARAMETER_ARN.fullmatch(arn):
        return arn
    raise InvalidArgument(
        f"callback URL secret {arn!r} must be a Secrets Manager secret ARN "
        "(arn:aws:secretsmanager:...:secret:...) or an SSM parameter ARN (arn:aws:ssm:...:parameter/...)"
    )


def read_secret(arn: str, session: boto3.Session | None = None, region: str | None = None) -> bytes:
    """The signing secret's bytes from Secrets Manager (SecretString or SecretBinary) or SSM (decrypted)."""
    check_secret_arn(arn)
    chosen = session or boto3.Session()
    region_name = region or arn.split(":")[3]
    if _SECRETS_ARN.fullmatch(arn):
        secrets: Any = chosen.client("secretsmanager", region_name=region_name)
        response = secrets.get_secret_value(SecretId=arn)
        if isinstance(response.get("SecretString"), str):
            value = response["SecretString"].encode("utf-8")
        else:
            value = bytes(response.get("SecretBinary") or b"")
    else:
        ssm: Any = chosen.client("ssm", region_name=region_name)
        response = ssm.get_parameter(Name=arn, WithDecryption=True)
        value = str(response["Parameter"]["Value"]).encode("utf-8")
    if not value:
        raise InvalidArgument(f"callback URL secret {arn!r} is empty")
    secret: bytes = value
    return secret


class Refusal(Exception):
    """A request answered with an error status; nothing was changed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _response(status: int, body: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"content-type": "application/json", "cache-control": "no-store"},
        "body": json.dumps(dict(body)),
    }


def _refuse(status: int, message: str) -> dict[str, Any]:
    return _response(status, {"error": message})


def _reject_constant(name: str) -> float:
    raise ValueError("non-finite numbers are not JSON")


class CallbackUrlHandler:
    """Answers function URL events (payload format 2.0) with the engine's callback operations."""

    def __init__(
        self,
        engine: Engine,
        *,
        secret: bytes | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        clock: Clock | None = None,
        secret_loader: Callable[[], bytes] | None = None,
    ) -> None:
        if not 1 <= max_body_bytes <= MAX_BODY_BYTES_LIMIT:
            raise InvalidArgument(f"max_body_bytes must be 1..{MAX_BODY_BYTES_LIMIT}, got {max_body_bytes}")
        if secret is not None and not secret:
            raise InvalidArgument("the callback URL secret must not be empty")
        self.engine = engine
        self.max_body_bytes = max_body_bytes
        self.clock = clock or engine.clock
        self._secret = secret
        # Read on the first request that needs it (once per container), not at import.
        self._secret_loader = secret_loader
        self._lock = threading.Lock()

    def _signing_secret(self) -> bytes | None:
        if self._secret is not None or self._secret_loader is None:
            return self._secret
        with self._lock:
            if self._secret is None:
                self._secret = self._secret_loader()
            return self._secret

    def handle(self, event: Any) -> dict[str, Any]:
        try:
            return self._handle(event)
        except Refusal as refusal:
            return _refuse(refusal.status, refusal.message)
        except Exception as error:
            # A transient AWS failure (throttling beyond the retries, a timeout). The engine reopened the
            # callback if it had marked it, so the sender may retry. The error's kind, never its text.
            logger.error("callback URL: failed (%s); answered 500", error_kind(error))
            return _refuse(500, "the callback could not be processed; try again")

    def _handle(self, event: Any) -> dict[str, Any]:
        if not isinstance(event, Mapping):
            raise Refusal(400, "not a function URL request")
        http = (
            event.get("requestContext", {}).get("http", {})
            if isinstance(event.get("requestContext"), Mapping)
            else {}
        )
        method = str(http.get("method", "")).upper() if isinstance(http, Mapping) else ""
        path = event.get("rawPath") or (http.get("path") if isinstance(http, Mapping) else None) or ""
        match = _ROUTE.fullmatch(path) if isinstance(path, str) else None
        if match is None or match.group(2) not in OUTCOMES:
            logger.info("callback URL: no route (404)")
            raise Refusal(404, "not found: POST /callbacks/{id}/success, /failure or /heartbeat")
        callback_id, outcome = match.group(1), match.group(2)
        if method != "POST":
            logger.info("callback URL: a method other than POST on /%s refused (405)", outcome)
            return {
                **_refuse(405, "method not allowed: use POST"),
                "headers": {"content-type": "application/json", "cache-control": "no-store", "allow": "POST"},
            }
        body = self._body(event)
        self._check_signature(event, method, path, body)
        if outcome == "success":
            result = self._success_body(body)
            self._complete(
                callback_id, outcome, lambda: self.engine.send_callback_success(callback_id, result)
            )
        elif outcome == "failure":
            error = self._failure_body(body)
            self._complete(
                callback_id, outcome, lambda: self.engine.send_callback_failure(callback_id, error)
            )
        else:
            if body:
                raise Refusal(400, "a heartbeat takes an empty body")
            self._complete(callback_id, outcome, lambda: self.engine.send_callback_heartbeat(callback_id))
        logger.info("callback URL: %s accepted (202)", outcome)
        return _response(202, {"accepted": outcome})

    def _body(self, event: Mapping[str, Any]) -> bytes:
        raw = event.get("body")
        if raw is None:
            return b""
        if not isinstance(raw, str):
            raise Refusal(400, "the request body is not text")
        # Base64 grows the text by a third; check before decoding anything larger than needed.
        if len(raw) > 2 * self.max_body_bytes + 8:
            raise Refusal(413, f"the body is larger than {self.max_body_bytes} bytes")
        if event.get("isBase64Encoded"):
            try:
                data = base64.b64decode(raw, validate=True)
            except (binascii.Error, ValueError):
                raise Refusal(400, "the body is not valid base64") from None
        else:
            data = raw.encode("utf-8", errors="surrogatepass")
        if len(data) > self.max_body_bytes:
            raise Refusal(413, f"the body is {len(data)} bytes; the limit is {self.max_body_bytes}")
        return data

    def _check_signature(self, event: Mapping[str, Any], method: str, path: str, body: bytes) -> None:
        try:
            secret = self._signing_secret()
        except Exception as error:
            logger.error("callback URL: the signing secret cannot be read (%s)", type(error).__name__)
            raise Refusal(
                500, "the callback URL's signing secret is unavailable; nothing was changed"
            ) from None
        if secret is None:
            return
        headers = event.get("headers")
        lower = (
            {str(key).lower(): value for key, value in headers.items()}
            if isinstance(headers, Mapping)
            else {}
        )
        timestamp = lower.get(TIMESTAMP_HEADER)
        given = lower.get(SIGNATURE_HEADER)
        if not isinstance(timestamp, str) or not isinstance(given, str):
            logger.info("callback URL: unsigned request refused (401)")
            raise Refusal(401, "missing X-Stepwell-Timestamp or X-Stepwell-Signature header")
        if not _TIMESTAMP.fullmatch(timestamp):
            logger.info("callback URL: bad timestamp refused (401)")
            raise Refusal(401, "X-Stepwell-Timestamp must be epoch seconds")
        if abs(self.clock.now() - int(timestamp)) > SIGNATURE_TOLERANCE_SECONDS:
            logger.info("callback URL: expired timestamp refused (401)")
            raise Refusal(401, f"X-Stepwell-Timestamp is more than {SIGNATURE_TOLERANCE_SECONDS} s from now")
        # The method and path as received: a signature made for another callback or outcome fails.
        expected = signature(secret, timestamp, method, path, body=body)
        if not hmac.compare_digest(expected.encode("ascii"), given.strip().encode("utf-8", errors="replace")):
            logger.info("callback URL: bad signature refused (401)")
            raise Refusal(
                401,
                "X-Stepwell-Signature does not match: "
                "sha256=<hex HMAC-SHA256 of '<timestamp>.<METHOD>.<path>.<body>'>",
            )

    @staticmethod
    def _text(body: bytes) -> str:
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            raise Refusal(400, "the body is not UTF-8 text") from None

    def _json(self, body: bytes) -> Any:
        try:
            return json.loads(self._text(body), parse_constant=_reject_constant)
        except ValueError as error:
            # The parser's message names a position, never the text itself.
            raise Refusal(400, f"the body is not valid JSON ({error})") from None
        except RecursionError:
            raise Refusal(400, "the body's JSON is nested too deeply") from None

    def _success_body(self, body: bytes) -> str | None:
        if not body.strip():
            return None
        self._json(body)
        return self._text(body)

    def _failure_body(self, body: bytes) -> dict[str, Any]:
        if not body.strip():
            return {}
        error = self._json(body)
        if not isinstance(error, dict):
            raise Refusal(
                400,
                "a failure body must be a JSON object with optional ErrorType, ErrorMessage, ErrorData "
                "and StackTrace",
            )
        try:
            return check_error_object(error, "callback") or {}
        except PayloadTooLarge as problem:
            raise Refusal(413, str(problem)) from None
        except InvalidArgument as problem:
            # check_error_object quotes a bad value: name the field only.
            raise Refusal(400, _without_values(str(problem))) from None

    def _complete(self, callback_id: str, outcome: str, send: Callable[[], object]) -> None:
        try:
            send()
        except ExecutionAlreadyEnded:
            logger.info(
                "callback URL: %s for callback %s refused: its execution has ended (409)",
                outcome,
                id_fingerprint(callback_id),
            )
            raise Refusal(409, "the callback's execution has ended") from None
        except CallbackNotFound:
            if self.engine.store.get_callback(callback_id) is None:
                logger.info(
                    "callback URL: %s for unknown callback %s (404)", outcome, id_fingerprint(callback_id)
                )
                raise Refusal(404, "no such callback") from None
            logger.info(
                "callback URL: %s for callback %s refused: already completed (409)",
                outcome,
                id_fingerprint(callback_id),
            )
            raise Refusal(409, "the callback has already completed or timed out") from None
        except PayloadTooLarge as problem:
            # Its message names sizes and the setting, never the payload.
            raise Refusal(413, str(problem)) from None
        except InvalidArgument as problem:
            raise Refusal(400, _without_values(str(problem))) from None


def id_fingerprint(callback_id: str) -> str:
    """What the logs say of a callback id: a digest that tells requests apart, not the id, which is the
    capability inside the URL (whoever reads the logs must not be able to complete the callback)."""
    return "sha256:" + hashlib.sha256(callback_id.encode()).hexdigest()[:12]


def error_kind(error: BaseException) -> str:
    """An error's type, and for an AWS error its code (as the worker logs them: codes name no data)."""
    response = getattr(error, "response", None)
    details = response.get("Error") if isinstance(response, Mapping) else None
    code = details.get("Code") if isinstance(details, Mapping) else None
    return f"{type(error).__name__} {code}" if isinstance(code, str) and code else type(error).__name__


def _without_values(message: str) -> str:
    """An engine error's message up to where it quotes the value (", got ...")."""
    return message.split(", got ", 1)[0]
