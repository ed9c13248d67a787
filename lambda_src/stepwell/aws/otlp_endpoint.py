"""The OTLP/HTTP endpoint the worker sends its spans to, kept in a Secrets Manager secret or an SSM
parameter (the module's traces.otlp_secret_arn / otlp_parameter) and read once per cold start: its
headers often carry a collector's credentials, so the environment names only where it is.

The document is JSON: `{"endpoint": "https://collector.example.com:4318", "headers": {"name": "value"}}`.
`endpoint` is the OTLP base URL (spans go to `<endpoint>/v1/traces`, as OTEL_EXPORTER_OTLP_ENDPOINT) or
that full traces URL; `headers` is optional. Input from outside: bounded and checked, errors name the
source and what is allowed, never a header's value.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError

from stepwell.aws.clients import error_code
from stepwell.config import ConfigError

TRACES_PATH = "/v1/traces"
MAX_DOCUMENT_CHARS = 16_384
MAX_URL_CHARS = 2048
MAX_HEADERS = 32
MAX_HEADER_VALUE_CHARS = 4096
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")  # an HTTP token
_HEADER_VALUE = re.compile(r"[\x20-\x7e]*")  # printable ASCII: no CR/LF to split a request


@dataclass(frozen=True)
class OtlpEndpoint:
    """Where spans go: the traces URL and the request's extra headers."""

    traces_url: str
    headers: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:  # the headers may hold credentials: never in a log line
        return f"OtlpEndpoint(traces_url={self.traces_url!r}, headers=<{len(self.headers)} hidden>)"


def parse_otlp_endpoint(source: str, text: str) -> OtlpEndpoint:
    """The endpoint document `text` read from `source` (named in errors), checked."""
    if len(text) > MAX_DOCUMENT_CHARS:
        raise ConfigError(f"{source}: the OTLP endpoint document is over {MAX_DOCUMENT_CHARS} characters")
    try:
        document = json.loads(text)
    except ValueError:
        raise ConfigError(
            f'{source}: not JSON; expected {{"endpoint": "https://HOST:4318", "headers": {{...}}}}'
        ) from None
    if not isinstance(document, dict):
        raise ConfigError(f'{source}: expected a JSON object {{"endpoint": ..., "headers": {{...}}}}')
    unknown = sorted(set(document) - {"endpoint", "headers"})
    if unknown:
        raise ConfigError(f"{source}: unknown keys {unknown}; allowed: endpoint, headers")
    return OtlpEndpoint(
        _traces_url(source, document.get("endpoint")), _headers(source, document.get("headers"))
    )


def _traces_url(source: str, endpoint: object) -> str:
    if not isinstance(endpoint, str) or not 0 < len(endpoint) <= MAX_URL_CHARS:
        raise ConfigError(f"{source}: endpoint must be an http(s) URL of at most {MAX_URL_CHARS} characters")
    try:
        parts = urlsplit(endpoint)
        port = parts.port
    except ValueError:
        raise ConfigError(f"{source}: endpoint {endpoint[:200]!r} is not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{source}: endpoint {endpoint[:200]!r} must be an http:// or https:// URL with a host"
        )
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise ConfigError(
            f"{source}: endpoint must have no user, query or fragment (credentials go in headers)"
        )
    del port  # checked above: urlsplit refuses a bad port only when it is read
    path = parts.path.rstrip("/")
    if not path.endswith(TRACES_PATH):
        path += TRACES_PATH
    return f"{parts.scheme}://{parts.netloc}{path}"


def _headers(source: str, headers: object) -> dict[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, dict) or len(headers) > MAX_HEADERS:
        raise ConfigError(f"{source}: headers must be an object of at most {MAX_HEADERS} name: value strings")
    checked: dict[str, str] = {}
    for name, value in headers.items():
        if not _HEADER_NAME.fullmatch(name):
            raise ConfigError(f"{source}: header name {name[:80]!r} is not an HTTP token")
        if (
            not isinstance(value, str)
            or len(value) > MAX_HEADER_VALUE_CHARS
            or not _HEADER_VALUE.fullmatch(value)
        ):
            # The value is not quoted: it may be a credential.
            raise ConfigError(
                f"{source}: header {name!r} must be printable ASCII of at most {MAX_HEADER_VALUE_CHARS} "
                "characters"
            )
        checked[name] = value
    return checked


def read_otlp_endpoint(
    *, secrets: Any, ssm: Any, secret_arn: str | None, parameter: str | None
) -> OtlpEndpoint:
    """The endpoint from the secret `secret_arn` (`secrets`: a boto3 Secrets Manager client) or the
    parameter `parameter` (`ssm`: a boto3 SSM client, decrypted when a SecureString); ConfigError naming
    it when it is missing, unreadable or bad."""
    if secret_arn is not None:
        source = f"secret {secret_arn}"
        try:
            text = secrets.get_secret_value(SecretId=secret_arn).get("SecretString")
        except ClientError as error:
            raise ConfigError(f"{source} could not be read: {error_code(error)}") from None
        except BotoCoreError as error:
            raise ConfigError(f"{source} could not be read: {type(error).__name__}") from None
    elif parameter is not None:
        source = f"SSM parameter {parameter}"
        try:
            text = ssm.get_parameter(Name=parameter, WithDecryption=True).get("Parameter", {}).get("Value")
        except ClientError as error:
            raise ConfigError(f"{source} could not be read: {error_code(error)}") from None
        except BotoCoreError as error:
            raise ConfigError(f"{source} could not be read: {type(error).__name__}") from None
    else:
        raise ConfigError("no OTLP endpoint: give a secret ARN or an SSM parameter name")
    if not isinstance(text, str):
        raise ConfigError(f"{source} holds no text (a binary secret?): expected the JSON endpoint document")
    return parse_otlp_endpoint(source, text)
