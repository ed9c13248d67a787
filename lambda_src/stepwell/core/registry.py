"""Registration: names map to `@durable_execution` handlers, and to plain functions `context.invoke` calls.

User modules register at import (`register(name, handler)` or `@workflow(name)` for durable workflows,
`register_function(name, fn)` or `@function(name)` for plain Lambda-style handlers); the worker imports the
modules listed in STEPWELL_WORKFLOW_MODULES at start. The worker's entry also allows Lambda functions as
invoke targets (`allow_lambda_targets`, from STEPWELL_INVOKE_FUNCTIONS).

A durable workflow's handler must be the SDK's `@durable_execution` wrapper: anything else is refused at
registration, where the mistake is written, instead of failing every run of the workflow later.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import CodeType
from typing import TYPE_CHECKING, Any, TypedDict, Unpack, cast

from aws_durable_execution_sdk_python import durable_execution

from stepwell.core.flow_limits import Concurrency, FlowResolver, Rate
from stepwell.core.invoke_targets import (
    LATEST_PUBLISHED,
    LATEST_VERSION,
    Handler,
    LambdaInvoker,
    LambdaTarget,
    PlainFunction,
    lambda_target_handler,
    parse_function_arn,
    parse_target,
    plain_function_handler,
)
from stepwell.errors import DuplicateWorkflow, InvalidArgument, InvalidWorkflowName, WorkflowNotFound
from stepwell.model import ExecutionRecord

if TYPE_CHECKING:
    from stepwell.core.remote_functions import AsyncLambdaInvoker, RemoteFunction

# Told of an execution's end when its code did not see it (a stop, a time-out, crashes, a stop racing its
# last run): the ended record and the execution's input, parsed.
EndObserver = Callable[[ExecutionRecord, object], None]

WORKFLOW_NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}\Z")
WORKFLOW_NAME_RULE = "1-64 characters: a letter, then letters, digits, '_', '.' or '-'"
MODULES_ENV = "STEPWELL_WORKFLOW_MODULES"
# AWS's DurableConfig ExecutionTimeout: 1 second to 366 days.
MAX_EXECUTION_TIMEOUT_SECONDS = 31_622_400

__all__ = [
    "MAX_EXECUTION_TIMEOUT_SECONDS",
    "MODULES_ENV",
    "WORKFLOW_NAME_PATTERN",
    "WORKFLOW_NAME_RULE",
    "Handler",
    "PlainFunction",
    "Registry",
    "WorkflowOptions",
    "WorkflowSettings",
    "default_registry",
    "function",
    "import_workflow_modules",
    "is_durable_handler",
    "register",
    "register_function",
    "validate_execution_timeout",
    "validate_workflow_name",
    "workflow",
]


class QualifierRefused(WorkflowNotFound):
    """A registered name with a qualifier Stepwell cannot honour (an alias, another version)."""


@functools.cache
def _durable_wrapper_code() -> CodeType | None:
    """The code of the function `@durable_execution` returns: every handler it wraps shares it (a closure
    of the decorator). Taken from a probe, so it follows the installed SDK."""

    def probe(event: Any, context: Any) -> None:
        return None

    return getattr(durable_execution(probe), "__code__", None)


def is_durable_handler(handler: object) -> bool:
    """Whether `handler` is the SDK's `@durable_execution` wrapper, or wraps one (a decorator written
    with functools.wraps above it, a functools.partial of it)."""
    wrapper_code = _durable_wrapper_code()
    seen: set[int] = set()
    current: object = handler
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if wrapper_code is not None and getattr(current, "__code__", None) is wrapper_code:
            return True
        inner = getattr(current, "__wrapped__", None)
        current = current.func if inner is None and isinstance(current, functools.partial) else inner
    return False


def check_durable_handler(name: str, handler: object) -> None:
    """TypeError naming the fix when workflow `name`'s handler is not a `@durable_execution` handler."""
    if is_durable_handler(handler):
        return
    described = _qualname(cast("Callable[..., object]", handler))
    short = described.rpartition(".")[2]
    short = short if short.isidentifier() else "handler"
    raise TypeError(
        f"workflow {name!r}: {described} is not a @durable_execution handler. Write:\n"
        f"    @workflow({name!r})\n    @durable_execution\n    def {short}(event, context): ...\n"
        "(decorators apply from the bottom up: with @durable_execution above @workflow, the bare function "
        "is registered). A wrapper of a durable handler says so with functools.wraps; a plain function "
        "that context.invoke calls is registered with register_function (or @function) instead."
    )


def validate_workflow_name(name: object) -> str:
    if not isinstance(name, str) or not WORKFLOW_NAME_PATTERN.match(name):
        raise InvalidWorkflowName(f"invalid workflow name {name!r}: a name is {WORKFLOW_NAME_RULE}")
    return name


def validate_execution_timeout(name: str, timeout: object) -> int | None:
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int)
        or not 1 <= timeout <= MAX_EXECUTION_TIMEOUT_SECONDS
    ):
        raise InvalidArgument(
            f"invalid execution_timeout {timeout!r} for workflow {name!r}: whole seconds from 1 to "
            f"{MAX_EXECUTION_TIMEOUT_SECONDS} (366 days), or None for no timeout"
        )
    return timeout


def check_flow_options(name: str, concurrency: object, rate: object, flow_resolver: object) -> None:
    """InvalidArgument naming the bad flow control option of workflow `name` and what is allowed."""
    if concurrency is not None and not isinstance(concurrency, Concurrency):
        raise InvalidArgument(
            f"invalid concurrency {concurrency!r} for workflow {name!r}: "
            "Concurrency(limit, key=None), e.g. Concurrency(3, key='$.customerId'), or None"
        )
    if rate is not None and not isinstance(rate, Rate):
        raise InvalidArgument(
            f"invalid rate {rate!r} for workflow {name!r}: "
            "Rate(limit, period_seconds, key=None), e.g. Rate(10, 60, key='$.customerId'), or None"
        )
    if flow_resolver is not None:
        if not callable(flow_resolver):
            raise InvalidArgument(
                f"invalid flow_resolver {flow_resolver!r} for workflow {name!r}: a callable "
                "(domain, input) -> tuple of FlowLimit, or None"
            )
        if concurrency is not None or rate is not None:
            raise InvalidArgument(
                f"workflow {name!r}: give either flow_resolver or concurrency/rate, not both "
                "(the resolver decides the limits)"
            )


@dataclass(frozen=True)
class WorkflowOptions:
    """How a registered name runs. `execution_timeout`: seconds from the start until the execution ends
    TIMED_OUT (None: never). `plain`: a plain function (or Lambda function), not a durable workflow.
    `concurrency`, `rate`: its flow control limits (stepwell.core.flow_limits); `flow_resolver`, when set,
    decides an execution's limits from its domain and input instead (the definitions' interpreter).
    `on_ended`, when set, is told of an execution's end that its code did not see and of every failure
    (one may escape the code before it records anything), once the end is logged (the definitions'
    interpreter finishes the context of a stopped execution, or of a run that failed past its own try)."""

    execution_timeout: int | None = None
    plain: bool = False
    concurrency: Concurrency | None = None
    rate: Rate | None = None
    flow_resolver: FlowResolver | None = None
    on_ended: EndObserver | None = None

    @property
    def has_flow_limits(self) -> bool:
        return self.concurrency is not None or self.rate is not None or self.flow_resolver is not None


class WorkflowSettings(TypedDict, total=False):
    """The keyword settings of a durable workflow's registration (`register`, `@workflow`)."""

    execution_timeout: int | None
    concurrency: Concurrency | None
    rate: Rate | None
    flow_resolver: FlowResolver | None
    on_ended: EndObserver | None


def workflow_options(name: str, settings: Mapping[str, object]) -> WorkflowOptions:
    """The options of workflow `name` registered with `settings`; TypeError for an unknown setting,
    InvalidArgument naming a bad value and what is allowed."""
    unknown = sorted(set(settings) - WorkflowSettings.__optional_keys__)
    if unknown:
        allowed = ", ".join(sorted(WorkflowSettings.__optional_keys__))
        raise TypeError(f"workflow {name!r}: unknown settings {unknown}; allowed: {allowed}")
    concurrency, rate, flow_resolver = (
        settings.get("concurrency"),
        settings.get("rate"),
        settings.get("flow_resolver"),
    )
    check_flow_options(name, concurrency, rate, flow_resolver)
    on_ended = settings.get("on_ended")
    if on_ended is not None and not callable(on_ended):
        raise InvalidArgument(f"invalid on_ended {on_ended!r} for workflow {name!r}: a callable or None")
    return WorkflowOptions(
        execution_timeout=validate_execution_timeout(name, settings.get("execution_timeout")),
        concurrency=cast("Concurrency | None", concurrency),
        rate=cast("Rate | None", rate),
        flow_resolver=cast("FlowResolver | None", flow_resolver),
        on_ended=cast("EndObserver | None", on_ended),
    )


@dataclass(frozen=True)
class _Registration:
    handler: Handler  # what the worker runs: the durable handler, or the wrapper of a plain function
    source: Callable[..., object]  # what the user registered (tells a module re-import from a clash)
    options: WorkflowOptions


class Registry:
    """Names to handlers. Registering the same callable twice under a name is allowed (module re-import).

    A name is a durable workflow (`register`) or a plain function (`register_function`); `context.invoke`
    may also name a Lambda function the entry allowed (`allow_lambda_targets`): `get`, `in`, `options`,
    `is_durable` and `executed_version` answer for all three. A registered name wins over a Lambda
    function of the same name.
    """

    def __init__(self) -> None:
        self._registrations: dict[str, _Registration] = {}
        self._lambda_targets: tuple[LambdaTarget, ...] = ()
        self._invoker: LambdaInvoker | None = None
        # Remote durable functions (stepwell.core.remote_functions): workflows whose code is a Lambda
        # function of the user's, invoked asynchronously.
        self._remote: dict[str, RemoteFunction] = {}
        self._remote_invoker: AsyncLambdaInvoker | None = None
        self._lock = threading.Lock()

    def register(self, name: str, handler: Handler, **settings: Unpack[WorkflowSettings]) -> Handler:
        """Register a durable workflow (a `@durable_execution` handler) with its `settings`: an
        `execution_timeout`, per-key flow control limits (stepwell.core.flow_limits:
        `concurrency=Concurrency(...)`, `rate=Rate(...)`) or a `flow_resolver`."""
        validate_workflow_name(name)
        if not callable(handler):
            raise TypeError(f"workflow {name!r}: handler must be callable, got {type(handler).__name__}")
        check_durable_handler(name, handler)
        options = workflow_options(name, settings)
        self._add(name, _Registration(handler, handler, options))
        return handler

    def workflow(self, name: str, **settings: Unpack[WorkflowSettings]) -> Callable[[Handler], Handler]:
        validate_workflow_name(name)
        workflow_options(name, settings)  # a bad setting fails where the decorator is written

        def decorate(handler: Handler) -> Handler:
            return self.register(name, handler, **settings)

        return decorate

    def register_function(self, name: str, fn: PlainFunction) -> PlainFunction:
        """Register a plain function `fn(event, lambda_context)` that `context.invoke(name, ...)` calls
        as a Lambda handler: its return value is the invoke's result, an exception its error."""
        validate_workflow_name(name)
        if not callable(fn):
            raise TypeError(f"function {name!r}: fn must be callable, got {type(fn).__name__}")
        if is_durable_handler(fn):
            # Called as fn(event, lambda_context), the SDK's wrapper would refuse every event it is given.
            raise TypeError(
                f"function {name!r}: {_qualname(fn)} is a @durable_execution handler; register it as a "
                "durable workflow with register (or @workflow), or register the undecorated function here"
            )
        self._add(name, _Registration(plain_function_handler(fn), fn, WorkflowOptions(plain=True)))
        return fn

    def function(self, name: str) -> Callable[[PlainFunction], PlainFunction]:
        validate_workflow_name(name)

        def decorate(fn: PlainFunction) -> PlainFunction:
            return self.register_function(name, fn)

        return decorate

    def _add(self, name: str, registration: _Registration) -> None:
        with self._lock:
            existing = self._registrations.get(name)
            if existing is not None:
                same_kind = existing.options.plain == registration.options.plain
                same_source = existing.source is registration.source or _qualname(
                    existing.source
                ) == _qualname(registration.source)
                if not (same_kind and same_source):
                    raise DuplicateWorkflow(
                        f"name {name!r} is already registered to {_describe(existing)}; "
                        f"cannot register {_describe(registration)} under it"
                    )
            self._registrations[name] = registration

    def allow_lambda_targets(self, arns: Iterable[str], invoker: LambdaInvoker) -> None:
        """Let `context.invoke` call these Lambda functions (unqualified function ARNs; the code may name
        one by name, name:qualifier, ARN or ARN:qualifier) through `invoker`. Replaces an earlier list."""
        targets = tuple(parse_function_arn(arn) for arn in arns)
        with self._lock:
            self._lambda_targets = targets
            self._invoker = invoker

    def allow_remote_functions(
        self,
        functions: Mapping[str, RemoteFunction],
        invoker: AsyncLambdaInvoker,
    ) -> None:
        """Make these Lambda functions workflows (the deployment's durable_functions): started, listed and
        stopped like the others, each run an asynchronous invoke of the function through `invoker`, which
        checkpoints against the API (the function is handed its execution's ARN as the API answers it:
        stepwell.core.arns.execution_arn_of_function). Replaces an earlier list; a name registered here
        in-process too is refused (DuplicateWorkflow)."""
        for name in functions:
            validate_workflow_name(name)
        with self._lock:
            clash = sorted(set(functions) & set(self._registrations))
            if clash:
                raise DuplicateWorkflow(
                    f"durable functions {clash} are also registered in-process; a name is one or the other"
                )
            self._remote = dict(functions)
            self._remote_invoker = invoker

    def remote(self, name: str) -> RemoteFunction | None:
        """The remote function that runs workflow `name`, if it is one."""
        return self._remote.get(name)

    def remote_invoker(self) -> AsyncLambdaInvoker:
        """The invoker of remote functions (allow_remote_functions set it)."""
        if self._remote_invoker is None:
            raise WorkflowNotFound(
                "no remote durable functions are allowed here (STEPWELL_DURABLE_FUNCTIONS)"
            )
        return self._remote_invoker

    def copy(self, *, registrations: bool = True) -> Registry:
        """A new registry with the same allowed Lambda functions (deployment settings) and, unless
        `registrations` is False, the same workflows and functions (the code)."""
        copied = Registry()
        with self._lock:
            if registrations:
                copied._registrations = dict(self._registrations)
            copied._lambda_targets = self._lambda_targets
            copied._invoker = self._invoker
            copied._remote = dict(self._remote)
            copied._remote_invoker = self._remote_invoker
        return copied

    def lambda_targets(self) -> list[str]:
        """The allowed Lambda function ARNs."""
        return [target.arn for target in self._lambda_targets]

    def unregister(self, name: str) -> None:
        with self._lock:
            self._registrations.pop(name, None)

    def get(self, name: str) -> Handler:
        registration = self._registrations.get(name)
        if registration is not None:
            return registration.handler
        if name in self._remote:
            raise WorkflowNotFound(
                f"workflow {name!r} is the remote durable function {self._remote[name].qualified_arn}: "
                "the worker invokes it (stepwell.core.remote_runs), it has no handler here"
            )
        target = self._lambda_target(name)
        assert self._invoker is not None  # set together with the targets
        return lambda_target_handler(target, self._invoker)

    def _lambda_target(self, name: str) -> LambdaTarget:
        """The allowed Lambda function `name` calls, with its qualifier; WorkflowNotFound saying what is
        allowed when there is none."""
        try:
            wanted = parse_target(name) if self._lambda_targets else None
        except InvalidArgument as error:
            raise WorkflowNotFound(f"{error}; {self._allowed()}") from None
        matches = [
            allowed for allowed in self._lambda_targets if wanted is not None and allowed.matches(wanted)
        ]
        if len(matches) > 1:
            raise WorkflowNotFound(
                f"invoke target {name!r} names more than one allowed Lambda function "
                f"({', '.join(m.arn for m in matches)}); name it by its ARN"
            )
        if matches and wanted is not None:
            return matches[0].with_qualifier(wanted.qualifier)
        raise WorkflowNotFound(f"no workflow, function or Lambda target {name!r}; {self._allowed()}")

    def _allowed(self) -> str:
        workflows = [n for n, r in sorted(self._registrations.items()) if not r.options.plain]
        functions = [n for n, r in sorted(self._registrations.items()) if r.options.plain]
        return (
            f"registered workflows: {', '.join(workflows) or 'none'}; "
            f"registered functions: {', '.join(functions) or 'none'}; "
            "allowed Lambda functions (STEPWELL_INVOKE_FUNCTIONS): "
            f"{', '.join(self.lambda_targets()) or 'none'}"
        )

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name in self._registrations or name in self._remote:
            return True
        try:
            self._lambda_target(name)
        except WorkflowNotFound:
            return False
        return True

    def names(self) -> list[str]:
        """The registered names (durable workflows, remote ones included, and plain functions)."""
        return sorted({*self._registrations, *self._remote})

    def options(self, name: str) -> WorkflowOptions:
        """How `name` runs. An allowed Lambda function is plain; a name not known here (a client that does
        not import the workflow code) has the default options."""
        registration = self._registrations.get(name)
        if registration is not None:
            return registration.options
        if name in self._remote:
            return WorkflowOptions()
        return WorkflowOptions(plain=True) if name in self else WorkflowOptions()

    def is_durable(self, name: str) -> bool:
        """Whether `name` is a registered durable workflow (an invoke of it has a DurableExecutionArn)."""
        registration = self._registrations.get(name)
        return (registration is not None and not registration.options.plain) or name in self._remote

    def invoke_name(self, target: str, code_version: str | None) -> str:
        """The name an invoke's target runs under: the target itself for a registered name or an allowed
        Lambda function (without `:$LATEST`, which names the unqualified function); for a registered name
        with a Lambda qualifier (AWS requires qualified names for durable functions, so ported code carries
        them) the bare name, when the qualifier is one Stepwell honours: $LATEST, $LATEST.PUBLISHED, or the
        version the invoke runs on (`code_version`, the caller's). WorkflowNotFound otherwise: a refused
        qualifier names the target and what it allows."""
        if target in self._registrations or target in self._remote:
            return target
        bare, colon, qualifier = target.rpartition(":")
        if colon and bare in self._registrations:
            allowed = [LATEST_VERSION, LATEST_PUBLISHED, *([code_version] if code_version else [])]
            if qualifier in allowed:
                return bare
            runs_on = f"version {code_version}" if code_version else "the code this worker has (unversioned)"
            raise QualifierRefused(
                f"invoke target {target!r}: {bare!r} runs on {runs_on}, so the qualifier {qualifier!r} is "
                f"not accepted; use {bare!r} or qualify it with {', '.join(allowed)}"
            )
        self._lambda_target(target)
        return target.removesuffix(":" + LATEST_VERSION)  # the unqualified function

    def executed_version(self, name: str, code_version: str | None) -> str | None:
        """The version of `name` that an invoke runs (ChainedInvokeStarted's ExecutedVersion): this
        worker's `code_version` ("$LATEST" unversioned) for what it registered; for a Lambda function its
        version qualifier, "$LATEST" unqualified, None for an alias (only Lambda knows where it points).
        None for an unknown name."""
        if name in self._registrations:
            return code_version or LATEST_VERSION
        if name in self._remote:
            return self._remote[name].qualifier or LATEST_VERSION
        try:
            target = self._lambda_target(name)
        except WorkflowNotFound:
            return None
        return target.executed_version


def _qualname(handler: Callable[..., object]) -> str:
    module = getattr(handler, "__module__", "?")
    return f"{module}.{getattr(handler, '__qualname__', type(handler).__name__)}"


def _describe(registration: _Registration) -> str:
    kind = "function" if registration.options.plain else "workflow"
    return f"{kind} {_qualname(registration.source)}"


def import_workflow_modules(modules: Iterable[str] | None = None) -> list[str]:
    """Import the user's workflow modules (default: STEPWELL_WORKFLOW_MODULES, comma-separated)."""
    if modules is None:
        modules = [m.strip() for m in os.environ.get(MODULES_ENV, "").split(",") if m.strip()]
    imported = []
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ImportError(
                f"cannot import workflow module {module!r} (from {MODULES_ENV}): {error}"
            ) from error
        imported.append(module)
    return imported


# The process-wide registry that user code registers into.
default_registry = Registry()
register = default_registry.register
workflow = default_registry.workflow
register_function = default_registry.register_function
function = default_registry.function
