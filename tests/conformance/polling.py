"""How a case drives its execution from outside, by AWS's conformance validator's rules (its `validate.py`
and `callback.py`, read for the facts), on the backend's clock instead of the wall clock.

- A case with `AsyncInvoke: true` is polled: the first poll `PollIntervalSeconds` (2) after the start, then
  one every interval after the previous poll's end. A poll reads the history and ends polling when it holds
  a terminal event (ExecutionSucceeded, ExecutionFailed, ExecutionTimedOut; ExecutionStopped is not one for
  AWS's poller), or, when no poll has seen a new event for `NoProgressTimeoutSeconds` (30), with an error.
  Otherwise it performs the `CallbackActions` of every new `CallbackStarted`, in history order, each after
  its `Delay`; a case with no `ExpectedResult` stops polling as soon as its expected history matches.
- Any other case is invoked synchronously: the execution runs to its end and no callback action is sent.
- A `CallbackActions` entry needs `CallbackName` (a name, `*` or `${/regex/}`) and `Operation` (success,
  failure or heartbeat, any case); each entry is used once; a heartbeat leaves its callback matchable by the
  next entry. A success sends its `Payload` as JSON; a failure's `Payload` must be a mapping, of which
  ErrorType, ErrorMessage, ErrorData and StackTrace are sent.
- Ours (the case's `x-stepwell` block): `StopExecution: {AfterEventType, Error}` stops the execution once,
  when it is idle and its history holds that event; such a case's ExecutionStopped ends its polling.
"""

from __future__ import annotations

import enum
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from matching import EXTENSION_KEY, Placeholders, json_ready, match_history, regex_of

POLL_INTERVAL_SECONDS = 2.0
NO_PROGRESS_TIMEOUT_SECONDS = 30.0
# The events that end AWS's polling (its list also names ExecutionCancelled, which no history has).
TERMINAL_EVENTS = frozenset({"ExecutionSucceeded", "ExecutionFailed", "ExecutionTimedOut"})
OPERATIONS = ("success", "failure", "heartbeat")
FAILURE_KEYS = ("ErrorType", "ErrorMessage", "ErrorData", "StackTrace")


class Sender(Protocol):
    """What performing a case's actions needs of a backend."""

    def history(self, execution_id: str) -> list[dict[str, Any]]: ...

    def send_callback(self, callback_id: str, operation: str, payload: Any) -> None: ...

    def stop(self, execution_id: str, error: dict[str, Any] | None) -> None: ...


@dataclass(frozen=True)
class CallbackAction:
    name: str
    operation: str
    payload: Any = None
    delay: float = 0.0

    @classmethod
    def parse(cls, raw: Any) -> CallbackAction:
        if not isinstance(raw, dict):
            raise ValueError(f"a CallbackAction must be a mapping, got {raw!r}")
        if not raw.get("CallbackName"):
            raise ValueError("CallbackAction requires a 'CallbackName' field")
        operation = raw.get("Operation")
        if not operation:
            raise ValueError("CallbackAction requires an 'Operation' field")
        if str(operation).lower() not in OPERATIONS:
            raise ValueError(
                f"Invalid operation {operation!r}. Must be one of: {', '.join(sorted(OPERATIONS))}"
            )
        delay = float(raw.get("Delay", 0) or 0)
        if not math.isfinite(delay) or delay < 0:
            raise ValueError(f"CallbackAction Delay must be a finite number of seconds >= 0, got {delay!r}")
        return cls(str(raw["CallbackName"]), str(operation).lower(), raw.get("Payload"), delay)


def callback_payload(operation: str, payload: Any) -> Any:
    """What the API call carries: a success's Result as JSON text (None: no Result), a failure's Error
    (None: no Error), a heartbeat nothing."""
    if operation == "success":
        return None if payload is None else json.dumps(payload)
    if operation == "failure":
        if payload is None:
            return None
        if not isinstance(payload, dict):
            raise ValueError(
                "Failure callback payload must be a dict containing ErrorType/ErrorMessage/ErrorData/"
                f"StackTrace fields, got {type(payload).__name__}: {payload!r}"
            )
        return {key: payload[key] for key in FAILURE_KEYS if key in payload} or None
    return None


class PollEnd(enum.Enum):
    TERMINAL = "terminal event"
    MATCHED = "expected history matched"
    NO_PROGRESS = "no progress"
    ENDED = "execution ended"  # a synchronous invoke returned


@dataclass
class _Send:
    at: float
    callback_id: str
    action: CallbackAction


@dataclass
class Driver:
    """One execution's outside world: its polls (asynchronous cases), callback actions and our stop."""

    data: dict[str, Any]
    names: Placeholders
    execution_id: str
    started_at: float
    polled: bool = False
    actions: list[CallbackAction] = field(default_factory=list)
    stop: dict[str, Any] | None = None
    interval: float = POLL_INTERVAL_SECONDS
    timeout: float = NO_PROGRESS_TIMEOUT_SECONDS
    next_poll_at: float = 0.0
    last_count: int = 0
    last_progress_at: float = 0.0
    changed: bool = True  # the last poll saw new events (or none has run yet)
    stopped: bool = False
    ended: PollEnd | None = None
    errors: list[str] = field(default_factory=list)
    handled: set[str] = field(default_factory=set)
    used: set[int] = field(default_factory=set)
    sends: list[_Send] = field(default_factory=list)

    @classmethod
    def for_case(cls, data: dict[str, Any], names: Placeholders, execution_id: str, now: float) -> Driver:
        driver = cls(data, names, execution_id, now, polled=bool(data.get("AsyncInvoke", False)))
        driver.stop = (data.get(EXTENSION_KEY) or {}).get("StopExecution")
        config = data.get("AsyncConfig") or {}
        driver.interval = float(config.get("PollIntervalSeconds", POLL_INTERVAL_SECONDS))
        driver.timeout = float(config.get("NoProgressTimeoutSeconds", NO_PROGRESS_TIMEOUT_SECONDS))
        driver.next_poll_at = now + driver.interval
        driver.last_progress_at = now
        try:
            # A synchronous invoke sends no callback, so AWS reads the actions of polled cases only.
            raw_actions = (data.get("CallbackActions") or []) if driver.polled else []
            driver.actions = [CallbackAction.parse(raw) for raw in raw_actions]
        except ValueError as error:
            driver.errors.append(f"Invalid CallbackAction: {error}")
            driver.ended = PollEnd.ENDED
        return driver

    # ------------------------------------------------------------------------------------ timing

    def next_time(self, wake_up: float | None) -> float | None:
        """When this driver next has something to do, given the execution's next wake-up (None: none
        armed): a send, or the next poll that can see something new (a poll that would see nothing new is
        skipped: the first poll at or after the wake-up, or the one that gives up)."""
        if self.ended is not None or not self.polled:
            return min((send.at for send in self.sends), default=None)
        times = [send.at for send in self.sends]
        if self.changed or self.sends:
            times.append(self.next_poll_at)
        else:
            times.append(self._poll_at_or_after(self.last_progress_at + self.timeout))
            if wake_up is not None:
                times.append(self._poll_at_or_after(wake_up))
        return min(times)

    def _poll_at_or_after(self, when: float) -> float:
        steps = max(0.0, math.ceil((when - self.next_poll_at) / self.interval))
        return self.next_poll_at + steps * self.interval

    # ----------------------------------------------------------------------------------- actions

    def act(self, backend: Sender, now: float, idle: bool, status: str) -> bool:
        """Do what is due at `now`; True when it sent or stopped something. `idle`: the execution has
        nothing due to run; `status` its status now."""
        acted = self._send_due(backend, now)
        if self.ended is not None:
            return acted
        if idle and self._stop_due(backend, status):
            return True
        if not self.polled:
            if idle and status != "RUNNING" and not self.sends:
                self.ended = PollEnd.ENDED
            return acted
        if now >= self.next_poll_at:
            self._poll(backend, now)
            acted = self._send_due(backend, now) or acted
        return acted

    def _send_due(self, backend: Sender, now: float) -> bool:
        due = [send for send in self.sends if send.at <= now]
        for send in due:
            self.sends.remove(send)
            try:
                backend.send_callback(
                    send.callback_id,
                    send.action.operation,
                    callback_payload(send.action.operation, self.names.substitute(send.action.payload)),
                )
            except Exception as error:
                self.errors.append(
                    f"Callback {send.action.operation} failed for callback_id={send.callback_id}: {error}"
                )
        return bool(due)

    def _stop_due(self, backend: Sender, status: str) -> bool:
        if self.stop is None or self.stopped or status != "RUNNING":
            return False
        wanted = self.stop.get("AfterEventType")
        if not any(event.get("EventType") == wanted for event in backend.history(self.execution_id)):
            return False
        self.stopped = True
        backend.stop(self.execution_id, self.names.substitute(self.stop.get("Error")))
        return True

    def _poll(self, backend: Sender, now: float) -> None:
        events = json_ready(backend.history(self.execution_id))
        types = {event.get("EventType") for event in events}
        if types & TERMINAL_EVENTS or (self.stopped and "ExecutionStopped" in types):
            self.ended = PollEnd.TERMINAL
            return
        self.changed = len(events) > self.last_count
        if self.changed:
            self.last_count = len(events)
            self.last_progress_at = now
        elif now - self.last_progress_at >= self.timeout:
            self.errors.append(
                f"No new events for {now - self.last_progress_at:.1f}s (timeout: {self.timeout}s)"
            )
            self.ended = PollEnd.NO_PROGRESS
            return
        end = now
        for event in events:
            if event.get("EventType") != "CallbackStarted":
                continue
            callback_id = (event.get("CallbackStartedDetails") or {}).get("CallbackId")
            if not callback_id or callback_id in self.handled:
                continue
            index, action = self._match(str(event.get("Name", "")))
            if action is None:
                if self.actions:
                    name = event.get("Name", "<anonymous>")
                    self.errors.append(f"No matching CallbackAction for callback {name!r} (id={callback_id})")
                self.handled.add(callback_id)
                continue
            self.used.add(index)
            if action.operation != "heartbeat":
                self.handled.add(callback_id)
            end += action.delay
            self.sends.append(_Send(end, callback_id, action))
        self.next_poll_at = end + self.interval
        expected = list(self.data.get("ExpectedExecutionHistory") or [])
        # AWS's history-only mode; matching binds into the case's names, as AWS's does.
        if (
            self.data.get("ExpectedResult") is None
            and expected
            and not match_history(expected, events, self.names)
        ):
            self.ended = PollEnd.MATCHED  # the sends this poll scheduled still go, as AWS's loop sends them

    def _match(self, event_name: str) -> tuple[int, CallbackAction | None]:
        for index, action in enumerate(self.actions):
            if index in self.used:
                continue
            wanted = str(self.names.substitute(action.name))
            pattern = regex_of(wanted)
            if wanted in ("*", event_name) or (pattern is not None and re.search(pattern, event_name)):
                return index, action
        return -1, None
