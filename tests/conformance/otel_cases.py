"""AWS's OpenTelemetry conformance suites (`aws-durable-execution-conformance-tests-otel` 0.2.0:
otel-invocation, otel-execution, otel-long-running) on the local backend, judged twice: by our runner as every
case is (history, result: runner.py), then by AWS's own `validate_trace` on the spans the SDK's OpenTelemetry
plugin exported to an OTLP/HTTP receiver on this machine (stepwell.testing.otlp_receiver), normalized by AWS's
`normalize_otlp_protobuf`.

AWS's packages say Requires-Python >=3.14 (only their S3 collector backend needs it, for compression.zstd,
which nothing here imports); the venv is 3.11, so `make otel-conformance` fetches the wheels unmodified
(pinned version and sha256) and unpacks them into .cache, and this module puts that folder on sys.path for
the tests only. No file of theirs is changed; `backends/_common.py` (matching_trace: the spans of one
execution, and of the executions it may name) is loaded by path because its package's __init__ imports
that S3 backend.
"""

from __future__ import annotations

import contextlib
import datetime as datetime_module
import importlib.util
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import ModuleType, SimpleNamespace
from typing import Any

import yaml
from case_registration import register_case_module
from local_backend import LocalBackend
from matching import Placeholders
from opentelemetry import trace as trace_api
from polling import Driver
from runner import (
    OWN_HANDLERS_DIR,
    REPO_ROOT,
    CaptureLogs,
    Case,
    _case_sort_key,
    drive,
    judge,
    load_handler_module,
)
from stepwell.core.arns import ArnContext

OTEL_CONFORMANCE_VERSION = "0.2.0"
OTEL_SITE = REPO_ROOT / ".cache" / f"otel-conformance-{OTEL_CONFORMANCE_VERSION}" / "site"
PACKAGE = "aws_durable_execution_conformance_tests_otel"
SUITES = ("otel-invocation", "otel-execution", "otel-long-running")
SERVICE_NAME = "stepwell-otel-conformance"
# otel-long-running's LONG_DELAY_SECONDS (AWS's default: 1 s; "hours" in the suite's words): three days on
# the virtual clock, where skipping ahead costs nothing.
LONG_DELAY_SECONDS = 3 * 24 * 3600
OTEL_HANDLERS_DIR = OWN_HANDLERS_DIR / "otel"


def otel_site_available() -> bool:
    return (OTEL_SITE / PACKAGE / "validators.py").is_file()


def _import_aws() -> dict[str, Any]:
    """AWS's normalizer, validator, model and trace matcher, from the unpacked wheels."""
    if not otel_site_available():
        raise FileNotFoundError(
            f"no {OTEL_SITE / PACKAGE}: run `make otel-conformance` (the Makefile fetches it)"
        )
    if str(OTEL_SITE) not in sys.path:
        sys.path.append(str(OTEL_SITE))
    from aws_durable_execution_conformance_tests_otel.model import TelemetryQuery
    from aws_durable_execution_conformance_tests_otel.normalizers import (
        normalize_otlp_json,
        normalize_otlp_protobuf,
    )
    from aws_durable_execution_conformance_tests_otel.validators import validate_trace

    common_name = f"{PACKAGE}.backends._common"
    common = sys.modules.get(common_name)
    if common is None:
        spec = importlib.util.spec_from_file_location(
            common_name, OTEL_SITE / PACKAGE / "backends" / "_common.py"
        )
        assert spec is not None and spec.loader is not None
        common = importlib.util.module_from_spec(spec)
        sys.modules[common_name] = common
        spec.loader.exec_module(common)
    return {
        "TelemetryQuery": TelemetryQuery,
        "normalize_otlp_json": normalize_otlp_json,
        "normalize_otlp_protobuf": normalize_otlp_protobuf,
        "validate_trace": validate_trace,
        "matching_trace": common.matching_trace,
    }


def otel_cases() -> list[Case]:
    """The suites' cases, each with its view's handler module (handlers/otel/invocation.py for the
    invocation view, execution.py for the execution view); each long-running case once per view (48)."""
    if not otel_site_available():
        return []
    cases = []
    for suite in SUITES:
        suite_dir = OTEL_SITE / PACKAGE / "test_requirements" / suite
        for path in sorted(suite_dir.glob("*.yaml"), key=_case_sort_key):
            data = yaml.safe_load(path.read_text())
            if (
                suite == "otel-long-running"
            ):  # both views: TelemetryAssertions and ExecutionTelemetryAssertions
                views = [(f"{path.stem}.{view}", view) for view in VIEW_ASSERTIONS]
            else:
                views = [(path.stem, "invocation" if suite == "otel-invocation" else "execution")]
            for case_id, view in views:
                cases.append(Case(suite, case_id, path, OTEL_HANDLERS_DIR / f"{view}.py", data))
    return cases


# Which of a case's assertion blocks each view's handler module answers.
VIEW_ASSERTIONS = {"invocation": "TelemetryAssertions", "execution": "ExecutionTelemetryAssertions"}


def telemetry_assertions(case: Case) -> dict[str, Any]:
    """The assertions for the case's view: otel-long-running has one block per view, the other suites one
    TelemetryAssertions for the suite's view."""
    key = (
        VIEW_ASSERTIONS[case.handler_path.stem]
        if case.suite == "otel-long-running"
        else "TelemetryAssertions"
    )
    raw = case.data.get(key)
    if not isinstance(raw, dict):
        raise ValueError(f"case {case.test_id}: no {key} mapping")
    return raw


class OtelLocalBackend(LocalBackend):
    """The local backend, registering the main handler with the options its scenario needs (the module's
    HANDLER_OPTIONS: wait-interrupted's execution timeout)."""

    def start(self, case: Case, module: ModuleType, event: Any) -> str:
        name = f"case.{case.suite}.{case.case_id}"
        options = dict(getattr(module, "HANDLER_OPTIONS", {})).get(event["Input"].get("scenario"), {})

        def register(workflow: str, handler: Any, **settings: Any) -> Any:
            return self.stepwell.register(workflow, handler, **(options if workflow == name else settings))

        register_case_module(module, name, register, self.stepwell.register_function)
        return self.stepwell.start(name, event)


@contextlib.contextmanager
def wall_clock_on(clock: Any) -> Iterator[None]:
    """The wall clock the plugins and the OpenTelemetry SDK read for a span's own start and end (datetime.now
    in the SDK's plugin module and the invocation plugin, time_ns in opentelemetry.sdk.trace) reads `clock`
    (the local backend's virtual clock: real time plus the time it skipped) while the case runs. The plugins
    mix that wall clock with the operations' timestamps, which come from Stepwell's clock; on AWS both are
    one clock, and on the virtual clock without this a 3-day wait would end days after the step that
    follows it starts.
    Only names these modules look up are replaced, and restored after: no file of theirs changes."""
    import opentelemetry.sdk.trace as sdk_trace
    from aws_durable_execution_sdk_python import plugin as sdk_plugin
    from aws_durable_execution_sdk_python_otel import invocation_plugin

    class VirtualDatetime(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return datetime.fromtimestamp(clock.now(), tz)

    shim = SimpleNamespace(
        **{name: getattr(datetime_module, name) for name in ("UTC", "timedelta", "timezone")}
    )
    shim.datetime = VirtualDatetime
    modules = (sdk_plugin, invocation_plugin)  # both `import datetime` and call datetime.datetime.now
    saved = (sdk_trace.time_ns, [module.datetime for module in modules])  # type: ignore[attr-defined]
    sdk_trace.time_ns = lambda: int(clock.now() * 1_000_000_000)  # type: ignore[attr-defined]
    for module in modules:
        module.datetime = shim  # type: ignore[attr-defined]
    try:
        yield
    finally:
        sdk_trace.time_ns = saved[0]  # type: ignore[attr-defined]
        for module, original in zip(modules, saved[1], strict=True):
            module.datetime = original  # type: ignore[attr-defined]


@dataclass
class OtelResult:
    case: Case
    errors: list[str]
    history: list[dict[str, Any]]
    spans: list[str]

    @property
    def passed(self) -> bool:
        return not self.errors


def _start(case: Case) -> tuple[Placeholders, Any]:
    names = Placeholders()
    variables = dict(case.data.get("Variables") or {})
    if "LONG_DELAY_SECONDS" in variables:
        variables["LONG_DELAY_SECONDS"] = LONG_DELAY_SECONDS
    names.resolve_variables(variables)
    event_input = names.substitute(case.data.get("Input"))
    if "delay_seconds" in event_input:
        event_input["delay_seconds"] = int(event_input["delay_seconds"])
    return names, {"Input": event_input}


def _case_data(case: Case) -> dict[str, Any]:
    """The case as our driver reads it: a long-running case's callback comes LONG_DELAY_SECONDS after the
    start, as AWS's long-running runner sends it, not the 1 s its CallbackActions say; and the driver waits
    that long for progress."""
    data = dict(case.data)
    if case.suite == "otel-long-running":
        # No progress for the whole delay is what these cases are about (AWS's runner waits it out too).
        data["AsyncConfig"] = {
            **(data.get("AsyncConfig") or {}),
            "NoProgressTimeoutSeconds": LONG_DELAY_SECONDS + 60,
        }
        if data.get("CallbackActions"):
            data["CallbackActions"] = [
                {**action, "Delay": LONG_DELAY_SECONDS} for action in data["CallbackActions"]
            ]
    return data


def run_otel_case(case: Case, receiver: Any) -> OtelResult:
    """Run `case` on a fresh local backend; the runner's verdict, then AWS's validate_trace on the spans
    `receiver` (an OtlpReceiver the process's tracer provider exports to) holds for the execution."""
    aws = _import_aws()
    backend = OtelLocalBackend()
    module = load_handler_module(case)
    names, event = _start(case)
    data = _case_data(case)
    started = datetime.now(UTC)
    with CaptureLogs() as logs, wall_clock_on(backend.stepwell.clock):
        execution_id = backend.start(case, module, event)
        driver = Driver.for_case(data, names, execution_id, backend.now())
        history = drive(backend, driver)
    errors = judge(
        Case(case.suite, case.case_id, case.yaml_path, case.handler_path, data),
        driver,
        history,
        backend.describe,
        backend.history,
        logs.lines,
    )
    arn = str(backend.describe(execution_id)["executionArn"])
    names.bindings["EXECUTION_ARN"] = arn
    # The local backend's history names a chained invoke's child by its execution id, where the Lambda API
    # shows its ARN (the one its handler is handed): the spans carry the ARN.
    for name, value in list(names.bindings.items()):
        if name.endswith("EXECUTION_ARN") and isinstance(value, str) and not value.startswith("arn:"):
            names.bindings[name] = ArnContext.local().execution_arn(value)
    names.bindings["SERVICE_NAME"] = SERVICE_NAME
    assertions = names.substitute(telemetry_assertions(case))
    unbound = sorted({name for name in names.unbound(yaml.safe_dump(assertions)) if not name.startswith("/")})
    if unbound:
        errors.append(f"TelemetryAssertions name placeholders nothing bound: {unbound}")
    allowed = assertions.get("allowed_execution_arns") or ()
    query = aws["TelemetryQuery"](
        execution_arn=arn,
        service_name=SERVICE_NAME,
        started_at=started - timedelta(seconds=30),
        ended_at=datetime.now(UTC) + timedelta(seconds=30),
        execution_arns=tuple(dict.fromkeys((arn, *([allowed] if isinstance(allowed, str) else allowed)))),
    )
    # Every span is in the receiver once the provider has flushed: the plugin flushes at each invocation's
    # end, and an export returns after the receiver has stored it (this flush covers a plugin that did not).
    flush = getattr(trace_api.get_tracer_provider(), "force_flush", None)
    if flush is not None and not flush():
        errors.append("OpenTelemetry: the tracer provider's flush did not finish")
    trace = aws["matching_trace"](_traces(receiver, aws), query)
    problems = (
        ["no span carries this execution's ARN"]
        if trace is None
        else aws["validate_trace"](trace, assertions, query, feature_disparities=())
    )
    errors += [f"OpenTelemetry: {problem}" for problem in problems]
    spans = [] if trace is None else [_describe_span(span) for span in trace.spans]
    return OtelResult(case, errors, history, spans)


def _traces(receiver: Any, aws: dict[str, Any]) -> list[Any]:
    traces: list[Any] = []
    for export in receiver.exports():
        if export.encoding.name == "PROTOBUF":
            traces += aws["normalize_otlp_protobuf"](export.payload)
        else:
            traces += aws["normalize_otlp_json"](export.payload)
    # One Trace per trace id across every request (each request's normalization groups only its own).
    merged: dict[str, list[Any]] = {}
    for trace in traces:
        merged.setdefault(trace.trace_id, []).extend(trace.spans)
    model = sys.modules[f"{PACKAGE}.model"]
    return [model.Trace(trace_id=trace_id, spans=tuple(spans)) for trace_id, spans in merged.items()]


def _describe_span(span: Any) -> str:
    keys = (
        "durable.operation.status",
        "durable.invocation.first",
        "durable.invocation.status",
        "durable.execution.status",
        "durable.attempt.outcome",
    )
    shown = {key: span.attributes[key] for key in keys if key in span.attributes}
    return (
        f"{span.name} [{span.status}] id={span.span_id} parent={span.parent_span_id} "
        f"trace={span.trace_id[:8]} links={len(span.links)} {shown}"
    )
