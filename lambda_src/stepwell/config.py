"""Stepwell's deployment settings: from the worker's environment or the module's `client_config` output.

Both sources describe the same deployment (docs/architecture.md); `StepwellConfig` is the one shape the
adapters, the client and the CLI read.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from stepwell.core.invoke_targets import parse_function_arn, parse_target
from stepwell.core.registry import validate_workflow_name
from stepwell.core.remote_functions import DURABLE_FUNCTIONS_ENV, RemoteFunction, parse_durable_functions
from stepwell.errors import InvalidArgument
from stepwell.limits import (
    DEFAULT_MAX_CALLBACK_RESULT_BYTES,
    DEFAULT_MAX_EXECUTION_INPUT_BYTES,
    DEFAULT_MAX_EXECUTION_RESULT_BYTES,
    DEFAULT_MAX_OPERATION_PAYLOAD_BYTES,
    PayloadLimits,
)


class ConfigError(ValueError):
    """The configuration is missing a setting or holds a bad value."""


# client_config key -> environment variable of the worker Lambda.
_ENV_BY_CLIENT_KEY: dict[str, str] = {
    "name": "STEPWELL_NAME",
    "definitions_table": "STEPWELL_DEFINITIONS_TABLE",
    "executions_table": "STEPWELL_EXECUTIONS_TABLE",
    "operations_table": "STEPWELL_OPERATIONS_TABLE",
    "coordination_table": "STEPWELL_COORDINATION_TABLE",
    "subject_index_name": "STEPWELL_SUBJECT_INDEX",
    "work_queue_url": "STEPWELL_WORK_QUEUE_URL",
    "work_queue_arn": "STEPWELL_WORK_QUEUE_ARN",
    "dlq_url": "STEPWELL_DLQ_URL",
    "dlq_arn": "STEPWELL_DLQ_ARN",
    "event_bus_name": "STEPWELL_EVENT_BUS_NAME",
    "event_bus_arn": "STEPWELL_EVENT_BUS_ARN",
    "schedule_group_name": "STEPWELL_SCHEDULE_GROUP",
    "scheduler_role_arn": "STEPWELL_SCHEDULER_ROLE_ARN",
    "payload_bucket": "STEPWELL_PAYLOAD_BUCKET",
    "wake_function_arn": "STEPWELL_WAKE_FUNCTION_ARN",
    "long_wait_wakeups": "STEPWELL_LONG_WAIT_WAKEUPS",
}

# Settings that are JSON objects: client_config key -> environment variable of the worker Lambda.
_JSON_OBJECT_ENV: dict[str, str] = {
    "event_extractor": "STEPWELL_EVENT_EXTRACTOR",
    "event_sources": "STEPWELL_EVENT_SOURCES",
    # Remote durable functions (stepwell.core.remote_functions): workflow name -> {function_arn, qualifier}.
    "durable_functions": "STEPWELL_DURABLE_FUNCTIONS",
}

INVOKE_FUNCTIONS_ENV = "STEPWELL_INVOKE_FUNCTIONS"
# The SSM parameter the module writes the durable functions' registrations to (modules/api), by name: the
# worker and the API function read it at cold start (stepwell.aws.parameters) instead of carrying the
# registrations in their environments, which would make them depend on the functions (issue 41).
DURABLE_FUNCTIONS_PARAMETER_ENV = "STEPWELL_DURABLE_FUNCTIONS_PARAMETER"
# SSM's advanced tier's limit; the module writes a standard one (4 KB).
MAX_DURABLE_FUNCTIONS_PARAMETER_CHARS = 8192
_DURABLE_FUNCTION_KEYS = frozenset({"function_arn", "qualifier", "timeout_seconds", "role_arn"})
_ROLE_ARN = re.compile(
    r"arn:aws[a-z-]*:iam::[0-9]{12}:role/(?:[A-Za-z0-9+=,.@_/-]{0,500}/)?[A-Za-z0-9+=,.@_-]{1,64}"
)
VISIBILITY_ENV = "STEPWELL_WORK_QUEUE_VISIBILITY_SECONDS"

# Payload limits (stepwell.limits): client_config key -> environment variable of the worker Lambda (the
# callbacks function has the callback result's).
PAYLOAD_LIMIT_ENV: dict[str, str] = {
    "max_execution_input_bytes": "STEPWELL_MAX_EXECUTION_INPUT_BYTES",
    "max_execution_result_bytes": "STEPWELL_MAX_EXECUTION_RESULT_BYTES",
    "max_operation_payload_bytes": "STEPWELL_MAX_OPERATION_PAYLOAD_BYTES",
    "max_callback_result_bytes": "STEPWELL_MAX_CALLBACK_RESULT_BYTES",
}

# Definitions' CPU budgets in seconds (stepwell.features.definitions.budgets): client_config key ->
# environment
# variable of the worker Lambda.
CPU_BUDGET_ENV: dict[str, str] = {
    "definitions_run_cpu_seconds": "STEPWELL_DEFINITIONS_RUN_CPU_SECONDS",
    "definitions_expression_cpu_seconds": "STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS",
}

# Settings that are whole numbers (client_config may give them as numbers or strings).
_INT_SETTINGS = (
    "retention_days",
    "keep_versions",
    "work_queue_visibility_seconds",
    "index_shards",
    "index_read_shards",
    *PAYLOAD_LIMIT_ENV,
)
# The executions table's sharded index keys (stepwell.aws.dynamodb_store.shards): settings -> variables.
INDEX_SHARDS_ENV = {
    "index_shards": "STEPWELL_INDEX_SHARDS",
    "index_read_shards": "STEPWELL_INDEX_READ_SHARDS",
}
# A listing page costs one Query per read shard; 64 shards carry 64,000 index writes per second.
MAX_INDEX_SHARDS = 64

# Settings that are numbers (client_config may give them as numbers or strings).
_FLOAT_SETTINGS = tuple(CPU_BUDGET_ENV)

# Settings that are true or false (client_config may give them as booleans or strings).
_BOOL_SETTINGS = ("status_events", "direct_wake_ups")

# Settings without which no adapter works.
_REQUIRED = ("name", "executions_table", "operations_table", "coordination_table", "work_queue_url")

DEFAULT_SUBJECT_INDEX = "domain-subjectId-index"
DEFAULT_RETENTION_DAYS = 30
DEFAULT_WORKER_ALIAS = "live"
DEFAULT_KEEP_VERSIONS = 3
MAX_KEEP_VERSIONS = 100
# SQS's longest visibility timeout (12 hours).
MAX_VISIBILITY_SECONDS = 43_200
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# Definitions' CPU budgets (stepwell.features.definitions takes its defaults from here: the settings sit below
# the features). A run over its budget must fail its context before Lambda kills the invocation: the module
# keeps the run's below the worker's `timeout`; here, where the timeout is not known, below Lambda's longest.
# An expression's: far above what a legitimate expression needs over a 256 KB event (a few milliseconds), far
# below a worker's timeout.
DEFAULT_RUN_CPU_SECONDS = 10.0
DEFAULT_EXPRESSION_CPU_SECONDS = 0.25
MAX_LAMBDA_TIMEOUT_SECONDS = 900
# How waits over SQS's 900 s delay wake (the module's long_wait_wakeups; stepwell.aws.timers): one Scheduler
# schedule each, or due items a recurring sweep sends (stepwell.core.wake_sweep).
LONG_WAIT_SCHEDULES = "schedules"
LONG_WAIT_SWEEP = "sweep"


@dataclass(frozen=True)
class StepwellConfig:
    """Names of one deployment's resources. Optional resources are empty strings when not configured."""

    name: str
    executions_table: str
    operations_table: str
    coordination_table: str
    work_queue_url: str
    definitions_table: str = ""
    subject_index_name: str = DEFAULT_SUBJECT_INDEX
    work_queue_arn: str = ""
    dlq_url: str = ""
    # Dead-letter queue of the one-time wake-up schedules: what Scheduler cannot deliver lands there.
    dlq_arn: str = ""
    event_bus_name: str = ""
    event_bus_arn: str = ""
    schedule_group_name: str = ""
    scheduler_role_arn: str = ""
    payload_bucket: str = ""
    worker_function_name: str = ""
    # The worker alias's ARN: one-time wake-up schedules invoke it directly, with no SQS message ("" =
    # they send to the work queue). Its asynchronous invoke config sends what fails there to the queue.
    wake_function_arn: str = ""
    # Whether a client wakes an execution now (a start, a callback result, a stop) by invoking that alias
    # asynchronously instead of with an SQS message (stepwell.aws.direct_wake). The module turns it off when
    # maximum_concurrency caps the queue's mapping, so that the cap holds for every start.
    direct_wake_ups: bool = False
    # How the worker wakes waits over 900 s: "schedules" (one each) or "sweep" (due items, a recurring sweep).
    long_wait_wakeups: str = LONG_WAIT_SCHEDULES
    # The alias the work queue's mapping invokes (its version is the live code) and how many of the
    # newest versions the reconciler keeps whatever runs on them.
    worker_alias: str = DEFAULT_WORKER_ALIAS
    keep_versions: int = DEFAULT_KEEP_VERSIONS
    # Shards of the status, workflow and version indexes' key values that writers spread executions over,
    # and that listings read (0 = index_shards; more while a raised count's old items live: shards.py).
    index_shards: int = 1
    index_read_shards: int = 0
    # The work queue's visibility timeout (seconds; 0 = not told): how long a killed run's message waits
    # before SQS delivers it again, which the reconciler's pruning of old versions must outwait
    # (stepwell.core.versions.prune_grace_seconds).
    work_queue_visibility_seconds: int = 0
    region: str = ""
    # Customer managed key the worker encrypts its one-time wake-up schedules with ("" = none).
    kms_key_arn: str = ""
    retention_days: int = DEFAULT_RETENTION_DAYS
    workflow_modules: tuple[str, ...] = ()
    event_extractor: Mapping[str, Any] = field(default_factory=dict)
    # Event source -> the domains its bus events may speak for
    # (stepwell.features.definitions.router.EventSources).
    event_sources: Mapping[str, Any] = field(default_factory=dict)
    log_level: str = "INFO"
    # Whether the worker puts executions' status-change events on the bus (stepwell.core.status_events).
    status_events: bool = True
    # Lambda functions context.invoke may call (unqualified function ARNs; the module's invoke_function_arns).
    invoke_functions: tuple[str, ...] = ()
    # Lambda functions of the user's that are workflows (the module's durable_functions): workflow name ->
    # {"function_arn": unqualified ARN, "qualifier": str or null, "timeout_seconds": 1..900, optional}.
    durable_functions: Mapping[str, Any] = field(default_factory=dict)
    # Payload limits in bytes (stepwell.limits; the module's max_*_bytes): the client and CLI refuse what
    # the deployment would, before sending it.
    max_execution_input_bytes: int = DEFAULT_MAX_EXECUTION_INPUT_BYTES
    max_execution_result_bytes: int = DEFAULT_MAX_EXECUTION_RESULT_BYTES
    max_operation_payload_bytes: int = DEFAULT_MAX_OPERATION_PAYLOAD_BYTES
    max_callback_result_bytes: int = DEFAULT_MAX_CALLBACK_RESULT_BYTES
    # CPU seconds a run of a definition's context (one invocation) may take, and each expression it
    # evaluates, the router's trigger filters included (stepwell.features.definitions.budgets).
    definitions_run_cpu_seconds: float = DEFAULT_RUN_CPU_SECONDS
    definitions_expression_cpu_seconds: float = DEFAULT_EXPRESSION_CPU_SECONDS

    def __post_init__(self) -> None:
        for key in _REQUIRED:
            if not getattr(self, key):
                raise ConfigError(
                    f"Stepwell configuration is missing {key!r} (required: {', '.join(_REQUIRED)})"
                )
        if self.log_level not in LOG_LEVELS:
            raise ConfigError(f"log level {self.log_level!r} is not one of {', '.join(LOG_LEVELS)}")
        if self.retention_days < 1:
            raise ConfigError(f"retention_days must be a positive number of days, got {self.retention_days}")
        if not 1 <= self.keep_versions <= MAX_KEEP_VERSIONS:
            raise ConfigError(
                f"keep_versions must be 1..{MAX_KEEP_VERSIONS} (how many newest worker versions to keep), "
                f"got {self.keep_versions}"
            )
        if not 0 <= self.work_queue_visibility_seconds <= MAX_VISIBILITY_SECONDS:
            raise ConfigError(
                f"work_queue_visibility_seconds must be 0..{MAX_VISIBILITY_SECONDS} (the work queue's "
                f"visibility timeout in seconds; 0 when not known), got {self.work_queue_visibility_seconds}"
            )
        if (
            not 1 <= self.index_shards <= MAX_INDEX_SHARDS
            or not 0 <= self.index_read_shards <= MAX_INDEX_SHARDS
        ):
            raise ConfigError(
                f"index_shards must be 1..{MAX_INDEX_SHARDS} and index_read_shards 0..{MAX_INDEX_SHARDS}, "
                f"got {self.index_shards} and {self.index_read_shards}"
            )
        if self.index_read_shards and self.index_read_shards < self.index_shards:
            raise ConfigError(
                f"index_read_shards ({self.index_read_shards}) must be 0 (= index_shards) or at least "
                f"index_shards ({self.index_shards}): listings read every shard writers write"
            )
        if not self.worker_alias:
            raise ConfigError("worker_alias must name the worker function's alias (default 'live'), got ''")
        if self.wake_function_arn:
            _check_wake_function(self.wake_function_arn)
        elif self.direct_wake_ups:
            raise ConfigError("direct_wake_ups needs wake_function_arn, the worker alias to invoke, got ''")
        if self.long_wait_wakeups not in (LONG_WAIT_SCHEDULES, LONG_WAIT_SWEEP):
            raise ConfigError(
                f"long_wait_wakeups must be {LONG_WAIT_SCHEDULES!r} or {LONG_WAIT_SWEEP!r}, "
                f"got {self.long_wait_wakeups!r}"
            )
        for arn in self.invoke_functions:
            try:
                parse_function_arn(arn)
            except InvalidArgument as error:
                raise ConfigError(f"invoke_functions ({INVOKE_FUNCTIONS_ENV}): {error}") from None
        try:
            for name in self.remote_functions:
                validate_workflow_name(name)
        except (InvalidArgument, ValueError) as error:
            raise ConfigError(f"durable_functions ({DURABLE_FUNCTIONS_ENV}): {error}") from None
        try:
            _ = self.payload_limits  # checks the four values
        except ValueError as error:
            raise ConfigError(str(error)) from None
        check_cpu_budgets(self.definitions_run_cpu_seconds, self.definitions_expression_cpu_seconds)

    @property
    def remote_functions(self) -> dict[str, RemoteFunction]:
        """The registered remote durable functions (durable_functions, checked)."""
        return parse_durable_functions(self.durable_functions, "durable_functions")

    @property
    def payload_limits(self) -> PayloadLimits:
        """The deployment's payload limits (stepwell.limits)."""
        return PayloadLimits(
            execution_input_bytes=self.max_execution_input_bytes,
            execution_result_bytes=self.max_execution_result_bytes,
            operation_payload_bytes=self.max_operation_payload_bytes,
            callback_result_bytes=self.max_callback_result_bytes,
        )

    @classmethod
    def from_client_config(cls, data: Mapping[str, Any]) -> StepwellConfig:
        """Build from the `client_config` output: the object itself, {"value": {...}}, or all outputs."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"client_config must be a JSON object, got {type(data).__name__}")
        # Accept `terraform output -json` of all outputs too: {"client_config": {"value": {...}}}.
        if "name" not in data and isinstance(data.get("client_config"), Mapping):
            data = data["client_config"]
        if "name" not in data and isinstance(data.get("value"), Mapping):
            data = data["value"]
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known or value is None:
                # Newer module versions may add outputs (older clients ignore them); null means unset.
                continue
            values[key] = value
        if "workflow_modules" in values:
            values["workflow_modules"] = _parse_modules(values["workflow_modules"])
        for key in _BOOL_SETTINGS:
            if key in values:
                values[key] = _parse_bool(key, values[key])
        if "invoke_functions" in values:
            values["invoke_functions"] = _parse_arn_list("invoke_functions", values["invoke_functions"])
        for key in _INT_SETTINGS:
            if key in values:
                values[key] = _parse_int(key, values[key])
        for key in _FLOAT_SETTINGS:
            if key in values:
                values[key] = _parse_float(key, values[key])
        for key, value in values.items():
            structured = key in (
                "workflow_modules",
                "invoke_functions",
                *_BOOL_SETTINGS,
                *_INT_SETTINGS,
                *_FLOAT_SETTINGS,
                *_JSON_OBJECT_ENV,
            )
            if not structured and not isinstance(value, str):
                raise ConfigError(f"client_config[{key!r}] must be a string, got {value!r}")
        missing = [key for key in _REQUIRED if not values.get(key)]
        if missing:
            raise ConfigError(f"client_config is missing {', '.join(missing)}")
        return cls(**values)

    @classmethod
    def from_file(cls, path: str | Path) -> StepwellConfig:
        """Read a JSON file written by `terraform output -json client_config`."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(f"cannot read the Stepwell config file {str(path)!r}: {error}") from error
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigError(f"the Stepwell config file {str(path)!r} is not valid JSON: {error}") from error
        return cls.from_client_config(data)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> StepwellConfig:
        """Build from the worker Lambda's environment variables (STEPWELL_*)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for key, variable in _ENV_BY_CLIENT_KEY.items():
            value = env.get(variable, "")
            if value:
                values[key] = value
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or ""
        if region:
            values["region"] = region
        if env.get("STEPWELL_WORKER_FUNCTION_NAME"):
            values["worker_function_name"] = env["STEPWELL_WORKER_FUNCTION_NAME"]
        if env.get("STEPWELL_KMS_KEY_ARN"):
            values["kms_key_arn"] = env["STEPWELL_KMS_KEY_ARN"]
        if env.get("STEPWELL_RETENTION_DAYS"):
            values["retention_days"] = _parse_int("STEPWELL_RETENTION_DAYS", env["STEPWELL_RETENTION_DAYS"])
        if env.get("STEPWELL_WORKER_ALIAS"):
            values["worker_alias"] = env["STEPWELL_WORKER_ALIAS"]
        if env.get("STEPWELL_KEEP_VERSIONS"):
            values["keep_versions"] = _parse_int("STEPWELL_KEEP_VERSIONS", env["STEPWELL_KEEP_VERSIONS"])
        if env.get(VISIBILITY_ENV):
            values["work_queue_visibility_seconds"] = _parse_int(VISIBILITY_ENV, env[VISIBILITY_ENV])
        for key, variable in INDEX_SHARDS_ENV.items():
            if env.get(variable):
                values[key] = _parse_int(variable, env[variable])
        for key, variable in PAYLOAD_LIMIT_ENV.items():
            if env.get(variable):
                values[key] = _parse_int(variable, env[variable])
        for key, variable in CPU_BUDGET_ENV.items():
            if env.get(variable):
                values[key] = _parse_float(variable, env[variable])
        if env.get("STEPWELL_WORKFLOW_MODULES"):
            values["workflow_modules"] = _parse_modules(env["STEPWELL_WORKFLOW_MODULES"])
        for key, variable in _JSON_OBJECT_ENV.items():
            if env.get(variable):
                values[key] = _parse_object(variable, env[variable])
        if env.get("STEPWELL_LOG_LEVEL"):
            values["log_level"] = env["STEPWELL_LOG_LEVEL"].upper()
        if env.get("STEPWELL_STATUS_EVENTS"):
            values["status_events"] = _parse_bool("STEPWELL_STATUS_EVENTS", env["STEPWELL_STATUS_EVENTS"])
        if env.get(INVOKE_FUNCTIONS_ENV):
            values["invoke_functions"] = _parse_arn_list(INVOKE_FUNCTIONS_ENV, env[INVOKE_FUNCTIONS_ENV])
        missing = [_ENV_BY_CLIENT_KEY[key] for key in _REQUIRED if key not in values]
        if missing:
            raise ConfigError(f"Stepwell environment is missing {', '.join(missing)}")
        return cls(**values)

    def with_durable_functions(self, registrations: Mapping[str, Any], source: str) -> StepwellConfig:
        """This configuration with `registrations` (from `source`, e.g. the parameter) registered too; a
        name registered in both is refused (which would run is ambiguous)."""
        both = sorted(set(registrations) & set(self.durable_functions))
        if both:
            raise ConfigError(f"{source} registers {both}, which {DURABLE_FUNCTIONS_ENV} registers too")
        return dataclasses.replace(self, durable_functions={**self.durable_functions, **registrations})

    def to_client_config(self) -> dict[str, Any]:
        """The `client_config` shape (round-trips through `from_client_config`)."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["workflow_modules"] = list(self.workflow_modules)
        out["invoke_functions"] = list(self.invoke_functions)
        for key in _JSON_OBJECT_ENV:
            out[key] = dict(getattr(self, key))
        return out

    def to_env(self) -> dict[str, str]:
        """The worker's environment for this deployment (what the Terraform module sets)."""
        env = {variable: str(getattr(self, key)) for key, variable in _ENV_BY_CLIENT_KEY.items()}
        env["STEPWELL_RETENTION_DAYS"] = str(self.retention_days)
        env["STEPWELL_WORKER_ALIAS"] = self.worker_alias
        env["STEPWELL_KEEP_VERSIONS"] = str(self.keep_versions)
        if self.work_queue_visibility_seconds:
            env[VISIBILITY_ENV] = str(self.work_queue_visibility_seconds)
        for key, variable in INDEX_SHARDS_ENV.items():
            if getattr(self, key):
                env[variable] = str(getattr(self, key))
        for key, variable in PAYLOAD_LIMIT_ENV.items():
            env[variable] = str(getattr(self, key))
        for key, variable in CPU_BUDGET_ENV.items():
            env[variable] = repr(float(getattr(self, key)))  # repr: the float exactly, read back equal
        env["STEPWELL_WORKFLOW_MODULES"] = ",".join(self.workflow_modules)
        for key, variable in _JSON_OBJECT_ENV.items():
            env[variable] = json.dumps(dict(getattr(self, key)))
        env["STEPWELL_LOG_LEVEL"] = self.log_level
        env["STEPWELL_STATUS_EVENTS"] = "true" if self.status_events else "false"
        env["STEPWELL_KMS_KEY_ARN"] = self.kms_key_arn
        env[INVOKE_FUNCTIONS_ENV] = json.dumps(list(self.invoke_functions))
        if self.region:
            env["AWS_REGION"] = self.region
        return {key: value for key, value in env.items() if value}


def cpu_budgets_from_env(environ: Mapping[str, str] | None = None) -> tuple[float, float]:
    """Definitions' CPU budgets (run, expression) from the worker's environment, checked; the defaults for
    a variable not set."""
    env = os.environ if environ is None else environ
    values = [DEFAULT_RUN_CPU_SECONDS, DEFAULT_EXPRESSION_CPU_SECONDS]
    for index, variable in enumerate(CPU_BUDGET_ENV.values()):
        if env.get(variable):
            values[index] = _parse_float(variable, env[variable])
    run, expression = values
    check_cpu_budgets(run, expression)
    return run, expression


# The worker's own spans (docs/reference/traces.md#exporting-traces): on or off, and where the OTLP/HTTP
# endpoint and its headers are kept (a Secrets Manager secret or an SSM parameter, read once per cold start:
# never the endpoint's credentials in the environment).
WORKER_SPANS_ENV = "STEPWELL_WORKER_SPANS"
OTLP_SECRET_ENV = "STEPWELL_OTLP_SECRET_ARN"
OTLP_PARAMETER_ENV = "STEPWELL_OTLP_PARAMETER"
_SECRET_ARN = re.compile(
    r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}"
)
_PARAMETER_NAME = re.compile(r"/[A-Za-z0-9_./-]{1,1000}")


@dataclass(frozen=True)
class SpanExportSettings:
    """Whether the worker records its own spans, and the secret or parameter its OTLP endpoint is in."""

    worker_spans: bool = False
    otlp_secret_arn: str | None = None
    otlp_parameter: str | None = None


def span_export_from_env(environ: Mapping[str, str] | None = None) -> SpanExportSettings:
    """The worker's span settings from its environment, checked: spans need exactly one place for the
    endpoint; a secret must be a Secrets Manager ARN, a parameter a name from the root ("/...")."""
    env = os.environ if environ is None else environ
    spans = _parse_bool(WORKER_SPANS_ENV, env[WORKER_SPANS_ENV]) if env.get(WORKER_SPANS_ENV) else False
    secret, parameter = env.get(OTLP_SECRET_ENV) or None, env.get(OTLP_PARAMETER_ENV) or None
    if secret is not None and parameter is not None:
        raise ConfigError(f"{OTLP_SECRET_ENV} and {OTLP_PARAMETER_ENV} are both set: give one of them")
    if secret is not None and not _SECRET_ARN.fullmatch(secret):
        raise ConfigError(
            f"{OTLP_SECRET_ENV} must be a Secrets Manager secret ARN "
            f"(arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME), got {secret[:200]!r}"
        )
    if parameter is not None and not _PARAMETER_NAME.fullmatch(parameter):
        raise ConfigError(
            f"{OTLP_PARAMETER_ENV} must be an SSM parameter name from the root (/path/name), "
            f"got {parameter[:200]!r}"
        )
    if spans and secret is None and parameter is None:
        raise ConfigError(
            f"{WORKER_SPANS_ENV} is true but neither {OTLP_SECRET_ENV} nor {OTLP_PARAMETER_ENV} says where "
            "the OTLP endpoint is"
        )
    return SpanExportSettings(worker_spans=spans, otlp_secret_arn=secret, otlp_parameter=parameter)


def check_cpu_budgets(run: float, expression: float) -> None:
    """A run's budget is more than 0 and below Lambda's longest timeout (the module holds it below the
    worker's); an expression's is more than 0 and at most the run's. NaN fails every comparison."""
    run_name, expression_name = (f"{key} ({variable})" for key, variable in CPU_BUDGET_ENV.items())
    if not 0 < run < MAX_LAMBDA_TIMEOUT_SECONDS:
        raise ConfigError(
            f"{run_name} must be more than 0 and less than {MAX_LAMBDA_TIMEOUT_SECONDS} seconds (the CPU one "
            f"run of a definition's context may take, below the worker's timeout), got {run:g}"
        )
    if not 0 < expression <= run:
        raise ConfigError(
            f"{expression_name} must be more than 0 and at most the run's budget ({run:g} s): the CPU one "
            f"expression evaluation may take, got {expression:g}"
        )


def _check_wake_function(arn: str) -> None:
    """The wake function is a qualified function ARN (the worker's alias): Scheduler targets need an ARN,
    and the alias is what keeps wake-ups on the live code."""
    try:
        target = parse_target(arn)
    except InvalidArgument:
        target = None
    if target is None or not target.partition or not target.qualifier:
        raise ConfigError(
            f"wake_function_arn (STEPWELL_WAKE_FUNCTION_ARN) must be a Lambda function ARN with an alias "
            f"(arn:aws:lambda:REGION:ACCOUNT:function:NAME:ALIAS), got {arn!r}"
        )


def _parse_int(name: str, value: object) -> int:
    try:
        return int(str(value))
    except ValueError as error:
        raise ConfigError(f"{name} must be a whole number, got {value!r}") from error


def _parse_float(name: str, value: object) -> float:
    # str() first, as _parse_int: a JSON true is not the number 1.
    try:
        return float(str(value))
    except ValueError as error:
        raise ConfigError(f"{name} must be a number of seconds, got {value!r}") from error


def _parse_bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"{name} must be true or false, got {value!r}")


def _parse_modules(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list | tuple):
        items = [str(item) for item in value]
    else:
        raise ConfigError(f"workflow_modules must be a comma-separated string or a list, got {value!r}")
    modules = tuple(item.strip() for item in items if item.strip())
    for module in modules:
        if not all(part.isidentifier() for part in module.split(".")):
            raise ConfigError(f"workflow module {module!r} is not a dotted Python module name")
    return modules


def _parse_arn_list(name: str, value: object) -> tuple[str, ...]:
    """A JSON list (text, as the environment has it, or a list) of strings; __post_init__ checks each."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{name} is not valid JSON: {error}") from error
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise ConfigError(
            f"{name} must be a JSON list of Lambda function ARNs (strings), "
            f"got {json.dumps(value, default=str)}"
        )
    return tuple(value)


def _parse_object(variable: str, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{variable} is not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise ConfigError(f"{variable} must be a JSON object, got {text!r}")
    return value


@dataclass(frozen=True)
class DurableFunctionsDocument:
    """The durable functions' parameter, checked: the registrations as `StepwellConfig.durable_functions`
    holds them (function_arn, qualifier, timeout_seconds) and the functions' execution roles, each once."""

    registrations: Mapping[str, Mapping[str, Any]]
    roles: tuple[str, ...]


def parse_durable_functions_parameter(parameter: str, text: str) -> DurableFunctionsDocument:
    """The parameter `parameter`'s value {"functions": {"<workflow>": {"function_arn", "qualifier",
    "timeout_seconds", "role_arn"}}} (JSON); ConfigError naming the parameter and what is wrong."""
    where = f"SSM parameter {parameter} ({DURABLE_FUNCTIONS_PARAMETER_ENV})"
    if len(text) > MAX_DURABLE_FUNCTIONS_PARAMETER_CHARS:
        raise ConfigError(
            f"{where} holds {len(text)} characters; at most {MAX_DURABLE_FUNCTIONS_PARAMETER_CHARS}"
        )
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ConfigError(f"{where} is not JSON: {error}") from None
    if (
        not isinstance(document, dict)
        or set(document) != {"functions"}
        or not isinstance(document["functions"], dict)
    ):
        keys = sorted(document) if isinstance(document, dict) else type(document).__name__
        raise ConfigError(
            f'{where} must be a JSON object {{"functions": {{"<workflow>": {{...}}}}}}; got {keys}'
        )
    registrations: dict[str, dict[str, Any]] = {}
    roles: list[str] = []
    for name, entry in document["functions"].items():
        if not isinstance(entry, dict) or set(entry) != _DURABLE_FUNCTION_KEYS:
            keys = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
            raise ConfigError(
                f"{where}: functions[{name!r}] must be an object with "
                f"{', '.join(sorted(_DURABLE_FUNCTION_KEYS))}; got {keys}"
            )
        role = entry["role_arn"]
        if not isinstance(role, str) or not _ROLE_ARN.fullmatch(role):
            raise ConfigError(
                f"{where}: functions[{name!r}].role_arn {str(role)[:200]!r} is no IAM role ARN "
                "(arn:aws:iam::ACCOUNT:role/NAME)"
            )
        registrations[name] = {key: entry[key] for key in ("function_arn", "qualifier", "timeout_seconds")}
        if role not in roles:
            roles.append(role)
    try:
        for name in parse_durable_functions(registrations, where):
            validate_workflow_name(name)
    except (InvalidArgument, ValueError) as error:
        raise ConfigError(str(error) if where in str(error) else f"{where}: {error}") from None
    return DurableFunctionsDocument(registrations=registrations, roles=tuple(roles))
