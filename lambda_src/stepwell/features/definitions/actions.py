"""Actions: Python callables that definitions call by name from `action` nodes.

An action is `fn(inputs: dict, context: ActionContext) -> JSON value`. Register your own with
`register_action(name, fn)` or `@action(name)` in the workflow code; the built-ins are:

- `stepwell.put_event`: put an event on the bus (inputs: detailType (not starting with `stepwell.`,
  the engine's commands), detail (an object), eventBusName =
  STEPWELL_EVENT_BUS_NAME). The engine stamps it: source "stepwell.definitions" and detail.domain = the
  calling context's domain, so a definition emits events for its own domain only; and it counts the chain:
  detail.stepwellDepth is one more than the depth of the events that started and resumed the context (an
  outside event has depth 0), and an event deeper than MAX_EVENT_DEPTH is refused, so definitions that
  start or resume each other with their own events (or one that triggers itself) stop there;
  detail.stepwellChain names the outside event the chain began with, whose budget of starts the router
  counts (router.CHAIN_STARTS_PER_DAY), so a chain that fans out stops there too.
- `stepwell.http`: an HTTP request to a URL the operator allowed (inputs: url (http or https), method = GET,
  headers (end-to-end ones only: `outbound.HEADER_RULE`), body (sent as JSON unless a string),
  timeoutSeconds = 10 (for the whole exchange, lookups and redirects included; cut to what the invocation
  has left but HTTP_TIME_RESERVE_SECONDS), maxResponseBytes =
  1 MiB (at most 10 MiB), followRedirects = true). `outbound` holds the rules (allowlist, no loopback,
  link-local or private address unless allowed); a refused request or a larger body raises a permanent
  error, a network failure or a missed deadline a retryable one, a 5xx or 429 answer a retryable one, any
  other 4xx a permanent one; the result is {status, headers, body} (body parsed as JSON when it is JSON;
  an answer whose JSON holds NaN, Infinity or a number past a float's range, such as 1e999, raises a
  permanent error: JSON numbers must be finite). The answer's status line and headers are bounded too
  (`outbound.MAX_HEADER_BYTES`, `outbound.MAX_HEADER_FIELDS`).
- `stepwell.invoke_lambda`: invoke a Lambda function (inputs: functionName, payload,
  invocationType = RequestResponse); a function error raises a retryable error.

An action raising `PermanentActionError` is not retried; any other exception goes to the node's retry
policy (mapped to the SDK's step retry strategy).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aws_durable_execution_sdk_python.config import Duration, JitterStrategy
from aws_durable_execution_sdk_python.retries import (
    RetryDecision,
    RetryStrategyConfig,
    create_retry_strategy,
)

from stepwell.core.status_events import STATUS_EVENT_DETAIL_TYPE
from stepwell.features.definitions import outbound
from stepwell.features.definitions.model import RetryPolicy

ActionFn = Callable[[dict[str, Any], "ActionContext"], Any]
ClientFactory = Callable[[str], Any]

PUT_EVENT = "stepwell.put_event"
# The source of events definitions emit; event_sources lets it speak for every domain because the
# engine stamps the emitting context's domain (and only the worker may put it on the module's bus).
ENGINE_EVENT_SOURCE = "stepwell.definitions"
# Detail types the engine reads as its own commands (stepwell.callback.success, ...): a definition's
# event must never look like one, whatever the bus rules match.
RESERVED_DETAIL_TYPE_PREFIX = "stepwell."
# Where put_event stamps the event's depth (the router reads it back from events of the engine's source),
# and how deep a chain of definitions' events may go: a context started or resumed by an event of depth
# d emits events of depth d + 1.
EVENT_DEPTH_KEY = "stepwellDepth"
MAX_EVENT_DEPTH = 8
# Where put_event stamps the id of the outside event its chain began with, and what such an id may be (a
# longer one, or one with control characters, is stamped as its digest).
EVENT_CHAIN_KEY = "stepwellChain"
CHAIN_ID = re.compile(r"[^\x00-\x1f\x7f]{1,256}")
HTTP = "stepwell.http"
INVOKE_LAMBDA = "stepwell.invoke_lambda"
HTTP_DEFAULT_MAX_BYTES = 1024 * 1024
HTTP_MAX_BYTES = 10 * 1024 * 1024
# What an HTTP request leaves of its invocation for recording its result (a request cut short by the
# invocation's end would be made again, and the rest of the invocation's batch with it).
HTTP_TIME_RESERVE_SECONDS = 10.0


class ActionError(Exception):
    """An action failed; retried by the node's retry policy."""


class PermanentActionError(ActionError):
    """An action failed in a way a retry cannot fix (bad input, a 4xx answer): not retried."""


class UnknownAction(LookupError):
    pass


@dataclass
class ActionContext:
    """What an action knows about the context calling it."""

    domain: str
    workflow_id: str
    subject_id: str
    instance_id: str
    node_id: str
    attempt: int
    clients: ClientFactory
    event_bus_name: str | None = None
    # The deployment's own functions (its worker): never an action's target, whatever IAM allows (the
    # worker may invoke its own versions to forward messages, and would run whatever it is handed).
    own_functions: frozenset[str] = frozenset()
    # The deepest event that started or resumed the context so far (0: only outside events), and the id
    # of the outside event its chain began with ("": the context's own instance id).
    event_depth: int = 0
    event_chain: str = ""
    # Seconds the invocation running the action has left (None: unknown): a request must end within it.
    time_left: Callable[[], float] | None = None


def default_client_factory(service: str) -> Any:
    import boto3

    return boto3.client(service)  # type: ignore[call-overload]


class ActionRegistry:
    def __init__(self, builtins: bool = True) -> None:
        self._actions: dict[str, ActionFn] = {}
        self._lock = threading.Lock()
        if builtins:
            for name, fn in _builtins().items():
                self.register(name, fn)

    def register(self, name: str, fn: ActionFn) -> ActionFn:
        if not isinstance(name, str) or not name or len(name) > 128:
            raise ValueError(f"invalid action name {name!r}: 1-128 characters")
        if not callable(fn):
            raise TypeError(f"action {name!r}: must be callable, got {type(fn).__name__}")
        with self._lock:
            self._actions[name] = fn
        return fn

    def action(self, name: str) -> Callable[[ActionFn], ActionFn]:
        def decorate(fn: ActionFn) -> ActionFn:
            return self.register(name, fn)

        return decorate

    def get(self, name: str) -> ActionFn:
        fn = self._actions.get(name)
        if fn is None:
            raise UnknownAction(f"unknown action {name!r} (registered: {', '.join(self.names()) or 'none'})")
        return fn

    def names(self) -> list[str]:
        return sorted(self._actions)

    def __contains__(self, name: object) -> bool:
        return name in self._actions


def retry_strategy(policy: RetryPolicy) -> Callable[[Exception, int], RetryDecision]:
    """The SDK step retry strategy for a node's retry policy; PermanentActionError is never retried."""
    delegate = create_retry_strategy(
        RetryStrategyConfig(
            max_attempts=policy.max_attempts,
            initial_delay=Duration.from_seconds(max(1, round(policy.initial_delay))),
            max_delay=Duration.from_seconds(max(1, round(policy.max_delay))),
            backoff_rate=policy.backoff_rate,
            jitter_strategy=JitterStrategy.FULL if policy.jitter == "full" else JitterStrategy.NONE,
        )
    )

    def strategy(error: Exception, attempts_made: int) -> RetryDecision:
        if _is_permanent(error):
            return RetryDecision.no_retry()
        return delegate(error, attempts_made)

    return strategy


def _is_permanent(error: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, PermanentActionError):
            return True
        if type(current).__name__ == "PermanentActionError":
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    error_type = getattr(error, "error_type", None)
    return error_type == "PermanentActionError"


# --- built-ins ------------------------------------------------------------------------------------


def _require_str(inputs: Mapping[str, Any], key: str, action_name: str) -> str:
    value = inputs.get(key)
    if not isinstance(value, str) or not value:
        raise PermanentActionError(
            f"action {action_name!r}: input {key!r} must be a non-empty string, got {value!r}"
        )
    return value


def detail_type_problem(detail_type: str) -> str | None:
    """Why a definition may not emit an event of this detail type (None: it may)."""
    if detail_type.strip().lower().startswith(RESERVED_DETAIL_TYPE_PREFIX):
        return (
            f"detailType {detail_type!r} is not allowed: detail types starting with "
            f"{RESERVED_DETAIL_TYPE_PREFIX!r} are the engine's own commands (e.g. stepwell.callback.success)"
        )
    if " ".join(detail_type.split()).lower() == STATUS_EVENT_DETAIL_TYPE.lower():
        return (
            f"detailType {detail_type!r} is not allowed: it is the engine's execution status change "
            "(rules matching it on detail type alone would take a definition's event for the engine's)"
        )
    return None


def put_event(inputs: dict[str, Any], context: ActionContext) -> Any:
    detail_type = _require_str(inputs, "detailType", PUT_EVENT)
    problem = detail_type_problem(detail_type)
    if problem:
        raise PermanentActionError(f"action {PUT_EVENT!r}: {problem}")
    depth = context.event_depth + 1
    if depth > MAX_EVENT_DEPTH:
        raise PermanentActionError(
            f"action {PUT_EVENT!r}: this context was started or resumed by an event {context.event_depth} "
            f"definitions deep, so its event would be {depth} deep; at most {MAX_EVENT_DEPTH} allowed (a "
            "chain of definitions whose events start or resume each other, or a definition triggering itself)"
        )
    detail = _stamped_detail(inputs.get("detail", {}), context.domain)
    detail[EVENT_DEPTH_KEY] = depth
    chain = context.event_chain or context.instance_id
    detail[EVENT_CHAIN_KEY] = (
        chain if CHAIN_ID.fullmatch(chain) else hashlib.sha256(chain.encode()).hexdigest()
    )
    source = inputs.get("source", ENGINE_EVENT_SOURCE)
    if source != ENGINE_EVENT_SOURCE:
        raise PermanentActionError(
            f"action {PUT_EVENT!r}: source {source!r} is not allowed; definitions emit events with source "
            f"{ENGINE_EVENT_SOURCE!r} only"
        )
    bus = inputs.get("eventBusName") or context.event_bus_name or os.environ.get("STEPWELL_EVENT_BUS_NAME")
    if not isinstance(bus, str) or not bus:
        raise PermanentActionError(
            f"action {PUT_EVENT!r}: no event bus: give input 'eventBusName' or set STEPWELL_EVENT_BUS_NAME"
        )
    response = context.clients("events").put_events(
        Entries=[
            {
                "Source": ENGINE_EVENT_SOURCE,
                "DetailType": detail_type,
                "Detail": json.dumps(detail),
                "EventBusName": bus,
            }
        ]
    )
    if response.get("FailedEntryCount", 0):
        entry = response.get("Entries", [{}])[0]
        raise ActionError(f"put_events failed: {entry.get('ErrorCode')}: {entry.get('ErrorMessage')}")
    return {"eventId": response.get("Entries", [{}])[0].get("EventId")}


def _stamped_detail(detail: Any, domain: str) -> dict[str, Any]:
    """The event's detail with the calling context's domain: the router takes the engine's source at its
    word for the domain (and the chain's depth and origin, which the caller stamps over whatever the
    definition wrote), so a definition must not name another."""
    if isinstance(detail, str):
        try:
            detail = json.loads(detail)
        except json.JSONDecodeError as error:
            raise PermanentActionError(f"action {PUT_EVENT!r}: detail is not JSON: {error}") from None
    if not isinstance(detail, Mapping):
        raise PermanentActionError(
            f"action {PUT_EVENT!r}: detail must be an object (the engine adds its domain), got {detail!r}"
        )
    claimed = detail.get("domain", domain)
    if claimed != domain:
        raise PermanentActionError(
            f"action {PUT_EVENT!r}: detail.domain {claimed!r} is not allowed; a definition of domain "
            f"{domain!r} emits events for {domain!r} only"
        )
    return {**detail, "domain": domain}


def http_request(inputs: dict[str, Any], context: ActionContext) -> Any:
    url = _require_str(inputs, "url", HTTP)
    method = str(inputs.get("method", "GET")).upper()
    if method not in ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"):
        raise PermanentActionError(
            f"action {HTTP!r}: method {method!r} is not one of GET, POST, PUT, PATCH, DELETE, HEAD"
        )
    headers = inputs.get("headers") or {}
    if not isinstance(headers, Mapping):
        raise PermanentActionError(f"action {HTTP!r}: headers must be an object, got {headers!r}")
    request_headers = {str(k): str(v) for k, v in headers.items()}
    try:  # headers may come from expressions: validation could check only literal ones
        outbound.check_headers(request_headers)
    except outbound.RequestRefused as error:
        raise PermanentActionError(f"action {HTTP!r}: {error}") from None
    body = inputs.get("body")
    data: bytes | None = None
    if body is not None:
        if isinstance(body, str):
            data = body.encode("utf-8")
        else:
            data = json.dumps(body).encode("utf-8")
            request_headers.setdefault("Content-Type", "application/json")
    timeout = _within_invocation(_bounded_number(inputs, "timeoutSeconds", 10, 300), context)
    max_bytes = int(_bounded_number(inputs, "maxResponseBytes", HTTP_DEFAULT_MAX_BYTES, HTTP_MAX_BYTES))
    follow = inputs.get("followRedirects", True)
    if not isinstance(follow, bool):
        raise PermanentActionError(f"action {HTTP!r}: followRedirects must be true or false, got {follow!r}")
    try:
        response = outbound.send(
            outbound.policy_from_env(),
            method,
            url,
            request_headers,
            body=data,
            timeout=timeout,
            max_bytes=max_bytes,
            follow_redirects=follow,
        )
    except outbound.RequestRefused as error:
        raise PermanentActionError(f"action {HTTP!r}: {method} refused: {error}") from None
    except outbound.RequestFailed as error:
        raise ActionError(f"action {HTTP!r}: {method} {url}: {error}") from None
    status = response.status
    text = response.body.decode("utf-8", "replace")
    if status >= 400:
        failure = f"{method} {response.url}: HTTP {status}: {text[:500]}"
        if status >= 500 or status == 429:
            raise ActionError(failure)
        raise PermanentActionError(failure)
    try:
        parsed: Any = _finite_json(text) if text else None
    except _NotFinite as error:
        raise PermanentActionError(
            f"action {HTTP!r}: {method} {response.url}: the answer's JSON holds {error}, and JSON numbers "
            "must be finite (NaN, Infinity and numbers past a float's range, such as 1e999, are refused)"
        ) from None
    except json.JSONDecodeError:
        parsed = text
    return {"status": status, "headers": response.headers, "body": parsed}


class _NotFinite(ValueError):
    """A JSON text holds a number that is not finite (the message is the number as written)."""


def _finite_json(text: str) -> Any:
    """json.loads, refusing what Python's json reads but JSON has no number for: NaN, Infinity,
    -Infinity, and numbers that overflow a float (1e999 reads as inf). They would be stored in context
    data and step results, which the engine's JSON (allow_nan=False) and DynamoDB refuse later, far from
    the cause. (stepwell.client.reject_json_constant cannot be imported here: client imports the
    interpreter, which imports this module; nor does it check overflowing numbers.)"""
    return json.loads(text, parse_constant=_refuse_not_finite, parse_float=_finite_float)


def _refuse_not_finite(token: str) -> Any:
    raise _NotFinite(token)


def _finite_float(token: str) -> float:
    number = float(token)
    if not math.isfinite(number):
        raise _NotFinite(token if len(token) <= 40 else token[:40] + "...")
    return number


def _bounded_number(inputs: Mapping[str, Any], key: str, default: float, limit: float) -> float:
    value = inputs.get(key, default)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= limit:
        raise PermanentActionError(f"action {HTTP!r}: {key} must be a number 0..{limit:g}, got {value!r}")
    return float(value)


def _within_invocation(timeout: float, context: ActionContext) -> float:
    """The request's timeout, cut to what the invocation has left past HTTP_TIME_RESERVE_SECONDS; a
    retryable error when that is under a second (a later invocation makes the request)."""
    if context.time_left is None:
        return timeout
    left = context.time_left() - HTTP_TIME_RESERVE_SECONDS
    if left < 1:
        raise ActionError(
            f"action {HTTP!r}: the invocation has {left + HTTP_TIME_RESERVE_SECONDS:.1f} s left, under the "
            f"{HTTP_TIME_RESERVE_SECONDS + 1:g} s a request needs with its result recorded; it is retried"
        )
    return min(timeout, left)


def _bare_function_name(function_name: str) -> str:
    """The function a FunctionName names, in any of Lambda's forms: NAME, NAME:QUALIFIER,
    ACCOUNT:function:NAME and arn:...:function:NAME[:QUALIFIER]."""
    _, marker, rest = function_name.partition("function:")
    return (rest if marker else function_name).split(":", 1)[0]


def invoke_lambda(inputs: dict[str, Any], context: ActionContext) -> Any:
    function_name = _require_str(inputs, "functionName", INVOKE_LAMBDA)
    if _bare_function_name(function_name) in context.own_functions:
        raise PermanentActionError(
            f"action {INVOKE_LAMBDA!r}: {function_name!r} is this deployment's own worker, which no "
            "definition may invoke; name a function of action_function_arns"
        )
    invocation_type = inputs.get("invocationType", "RequestResponse")
    if invocation_type not in ("RequestResponse", "Event"):
        raise PermanentActionError(
            f"action {INVOKE_LAMBDA!r}: invocationType {invocation_type!r} is not RequestResponse or Event"
        )
    payload = inputs.get("payload", {})
    response = context.clients("lambda").invoke(
        FunctionName=function_name,
        InvocationType=invocation_type,
        Payload=json.dumps(payload).encode("utf-8"),
    )
    body = response.get("Payload")
    text = body.read().decode("utf-8") if body is not None and hasattr(body, "read") else ""
    if response.get("FunctionError"):
        raise ActionError(f"function {function_name!r} failed: {response['FunctionError']}: {text[:500]}")
    try:
        result: Any = json.loads(text) if text else None
    except json.JSONDecodeError:
        result = text
    return {"statusCode": response.get("StatusCode"), "payload": result}


def _builtins() -> dict[str, ActionFn]:
    return {PUT_EVENT: put_event, HTTP: http_request, INVOKE_LAMBDA: invoke_lambda}


default_actions = ActionRegistry()
register_action = default_actions.register
action = default_actions.action
