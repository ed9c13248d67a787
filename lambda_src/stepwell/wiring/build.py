"""An engine built on a deployment's AWS resources from its settings (StepwellConfig): the one place the
adapters are chosen, used by the worker's entry, the callback-URL function and the operator client."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

import boto3

from stepwell.aws.clients import AwsClients
from stepwell.aws.direct_wake import DirectWakeQueue
from stepwell.aws.dynamodb_store import DynamoDbExecutionStore
from stepwell.aws.dynamodb_store.shards import IndexShards
from stepwell.aws.lambda_invoker import BotoLambdaInvoker
from stepwell.aws.lambda_versions import LambdaFunctionVersions
from stepwell.aws.otlp_endpoint import read_otlp_endpoint
from stepwell.aws.otlp_spans import OtlpSpanRecorder
from stepwell.aws.parameters import read_durable_functions
from stepwell.aws.payloads import S3PayloadStore
from stepwell.aws.status_events import EventBridgeStatusEvents
from stepwell.aws.timers import WakeScheduler
from stepwell.aws.work_queue import SqsWorkQueue
from stepwell.clock import default_clock
from stepwell.config import (
    DURABLE_FUNCTIONS_PARAMETER_ENV,
    ConfigError,
    StepwellConfig,
    span_export_from_env,
)
from stepwell.core.arns import ArnContext
from stepwell.core.engine import Engine
from stepwell.core.metrics import Metrics, NoMetrics
from stepwell.core.registry import Registry, validate_workflow_name
from stepwell.core.status_events import NoStatusEvents
from stepwell.core.versions import running_version
from stepwell.features.definitions.interpreter import register_interpreter
from stepwell.ports import Clock, WorkQueue
from stepwell.ports.spans import NoSpans, SpanRecorder
from stepwell.wiring.long_waits import attach_due_wakeups

logger = logging.getLogger(__name__)


def deployment_arns(config: StepwellConfig) -> ArnContext | None:
    """The partition, region and account of the deployment's ARNs (its executions', stepwell.core.arns), as
    the ARNs of its resources in `config` tell them; None when it names none."""
    for arn in (config.work_queue_arn, config.dlq_arn, config.event_bus_arn, config.wake_function_arn):
        parts = arn.split(":")
        if len(parts) >= 6 and parts[0] == "arn" and parts[1] and parts[3] and parts[4]:
            return ArnContext(partition=parts[1], region=parts[3], account=parts[4])
    return None


def with_durable_functions_parameter(
    config: StepwellConfig, environ: Mapping[str, str], clients: AwsClients
) -> tuple[StepwellConfig, tuple[str, ...]]:
    """`config` with the durable functions of the parameter the environment names
    (STEPWELL_DURABLE_FUNCTIONS_PARAMETER, read once here: at cold start) and their execution roles; as it
    is, with no roles, when no parameter is named. STEPWELL_DURABLE_FUNCTIONS still registers functions
    directly (the harness, tests)."""
    parameter = environ.get(DURABLE_FUNCTIONS_PARAMETER_ENV, "")
    if not parameter:
        return config, ()
    document = read_durable_functions(clients.ssm, parameter)
    return config.with_durable_functions(document.registrations, f"SSM parameter {parameter}"), document.roles


def span_recorder(environ: Mapping[str, str], clients: AwsClients) -> SpanRecorder:
    """The worker's span recorder (Worker(spans=...)): NoSpans unless STEPWELL_WORKER_SPANS is true, else
    one to the OTLP endpoint of the secret or parameter the environment names, read here (at cold start).
    A bad setting is the deployment's error (ConfigError); an endpoint that cannot be read or is bad
    turns spans off with an error in the log: tracing never stops the worker."""
    settings = span_export_from_env(environ)
    if not settings.worker_spans:
        return NoSpans()
    try:
        secrets = None
        if settings.otlp_secret_arn is not None:
            secrets = boto3.client(
                "secretsmanager",
                region_name=clients.region,
                endpoint_url=clients.service_endpoints.get("secretsmanager", clients.endpoint_url),
            )
        endpoint = read_otlp_endpoint(
            secrets=secrets,
            ssm=clients.ssm if settings.otlp_parameter is not None else None,
            secret_arn=settings.otlp_secret_arn,
            parameter=settings.otlp_parameter,
        )
    except ConfigError as error:
        logger.error("the worker's spans are off: %s", error)
        return NoSpans()
    return OtlpSpanRecorder(endpoint)


def allow_deployment_targets(registry: Registry, config: StepwellConfig, clients: AwsClients) -> Registry:
    """`registry` with the deployment's Lambda targets of `context.invoke` (invoke_functions) and its remote
    durable functions (durable_functions) allowed, as the worker and the API function both need them: the
    worker invokes them, and the API's data plane resolves a remote function's chained invoke of either."""
    if config.invoke_functions:
        registry.allow_lambda_targets(config.invoke_functions, BotoLambdaInvoker(clients))
    if config.durable_functions:
        # The user's own durable functions (stepwell.core.remote_runs), invoked asynchronously, each handed
        # its execution's ARN as the API answers it (stepwell.core.arns: one ARN per execution).
        invoker = BotoLambdaInvoker(clients)
        registry.allow_remote_functions(config.remote_functions, invoker)
    return registry


class AnyWorkflowRegistry(Registry):
    """The client does not import the workflow code: every valid name may be started, and the worker
    (which has the code) fails an execution whose workflow it does not know. The definitions' interpreter
    is registered (its handler never runs here) so that a context this client starts (`process_event`)
    gets its definition's flow limits when it is created, as one the worker starts does."""

    def __init__(self) -> None:
        super().__init__()
        register_interpreter(self)

    def __contains__(self, name: object) -> bool:
        try:
            validate_workflow_name(name)
        except ValueError:
            return False
        return True


def build_engine(
    config: StepwellConfig,
    clients: AwsClients,
    registry: Registry,
    clock: Clock | None = None,
    *,
    metrics: Metrics | None = None,
) -> Engine:
    """The engine on a deployment's AWS resources (`metrics`: the worker's; a client emits none)."""
    payloads = S3PayloadStore(clients.s3, config.payload_bucket) if config.payload_bucket else None
    store = DynamoDbExecutionStore(
        clients.dynamodb,
        executions_table=config.executions_table,
        operations_table=config.operations_table,
        coordination_table=config.coordination_table,
        subject_index=config.subject_index_name,
        payloads=payloads,
        retention_days=config.retention_days,
        index_shards=IndexShards(
            write=config.index_shards, read=config.index_read_shards or config.index_shards
        ),
    )
    # A client without a clock follows a local stack's virtual clock when the environment names its file
    # (STEPWELL_CLOCK_OFFSET_FILE); the worker's entry and the functions pass the system clock.
    engine_clock = clock or default_clock()
    queue = SqsWorkQueue(clients.sqs, config.work_queue_url)
    wake_queue: WorkQueue = queue
    if config.direct_wake_ups:
        wake_queue = DirectWakeQueue(queue, clients.lambda_wake, config.wake_function_arn)
    timers = WakeScheduler(
        queue,
        clients.scheduler if config.schedule_group_name else None,
        schedule_group=config.schedule_group_name,
        scheduler_role_arn=config.scheduler_role_arn,
        work_queue_arn=config.work_queue_arn,
        clock=engine_clock.now,
        kms_key_arn=config.kms_key_arn,
        dead_letter_arn=config.dlq_arn,
        wake_function_arn=config.wake_function_arn,
    )
    functions = (
        LambdaFunctionVersions(clients.lambda_invoke, config.worker_function_name, config.worker_alias)
        if config.worker_function_name
        else None
    )
    engine = Engine(
        store=store,
        queue=wake_queue,
        timers=timers,
        payloads=payloads if payloads is not None else _NoPayloadBucket(config.name),
        clock=engine_clock,
        registry=registry,
        code_version=running_version(os.environ),
        functions=functions,
        status_events=(
            EventBridgeStatusEvents(clients.events, config.event_bus_name)
            if config.status_events and config.event_bus_name
            else NoStatusEvents()
        ),
        metrics=metrics or NoMetrics(),
        limits=config.payload_limits,
        arns=deployment_arns(config) or ArnContext.local(),
    )
    attach_due_wakeups(config, clients, engine)
    return engine


class _NoPayloadBucket:
    """Stands in for S3 when the deployment has no payload bucket: large values are a clear error."""

    def __init__(self, name: str) -> None:
        self._name = name

    def put(self, execution_id: str, label: str, data: str) -> str:
        return self.reference(execution_id, label, data)

    def reference(self, execution_id: str, label: str, data: str) -> str:
        raise ValueError(
            f"{label} of {execution_id!r} is {len(data.encode('utf-8'))} bytes, too large to keep inline, "
            f"and deployment {self._name!r} has no payload bucket configured"
        )

    def get(self, reference: str) -> str:
        raise ValueError(
            f"payload {reference!r} cannot be read: deployment {self._name!r} has no payload bucket"
        )

    def retire(self, execution_id: str) -> int:
        return 0  # nothing was ever offloaded

    def delete_execution(self, execution_id: str) -> int:
        return 0  # nothing was ever offloaded
