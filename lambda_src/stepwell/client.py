"""The Python client for operators and users of a deployed Stepwell.

Built from the module's `client_config` output (a dict, or the JSON file `terraform output -json
client_config` writes) or from the worker's environment variables. It runs the engine's API (start,
describe, list, history, callbacks, stop, upgrades to another code version, flow control status) directly
on the deployment's tables and queue, lists the worker's code versions, and redrives the dead-letter queue.

    client = StepwellClient.from_config_file("client_config.json")
    execution_id = client.start_execution("orders", {"order": 7}, execution_name="order-7")
    print(client.describe_execution(execution_id)["Status"])
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepwell.aws import AwsClients
from stepwell.clock import SystemClock
from stepwell.config import ConfigError, StepwellConfig
from stepwell.definitions.interpreter import register_interpreter
from stepwell.direct_wake import DirectWakeQueue
from stepwell.dynamodb_store import DynamoDbExecutionStore
from stepwell.engine import Engine, check_error_object
from stepwell.errors import InvalidArgument
from stepwell.lambda_versions import LambdaFunctionVersions
from stepwell.metrics import Metrics, NoMetrics
from stepwell.model import ExecutionId, ExecutionRecord, ExecutionStatus, Page
from stepwell.payloads import S3PayloadStore
from stepwell.ports import Clock, FunctionVersions, WorkQueue
from stepwell.registry import Registry, validate_workflow_name
from stepwell.schedules import ScheduleManager, ScheduleTarget
from stepwell.status_events import EventBridgeStatusEvents, NoStatusEvents
from stepwell.timers import WakeScheduler
from stepwell.versions import running_version
from stepwell.work_queue import RedriveResult, SqsWorkQueue, redrive_dead_letters

if TYPE_CHECKING:
    from stepwell.definitions.service import DefinitionsService

# Callback commands on the bus: the bus rule delivers them to the work queue (see stepwell.entry).
CALLBACK_SUCCESS = "stepwell.callback.success"
CALLBACK_FAILURE = "stepwell.callback.failure"
CALLBACK_HEARTBEAT = "stepwell.callback.heartbeat"
CALLBACK_DETAIL_TYPES = {
    "success": CALLBACK_SUCCESS,
    "fail": CALLBACK_FAILURE,
    "heartbeat": CALLBACK_HEARTBEAT,
}
CALLBACK_EVENT_SOURCE = "stepwell.client"


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
    metrics: Metrics | None = None,
) -> Engine:
    """The engine on a deployment's AWS resources (`metrics`: the worker's; a client emits none)."""
    payloads = S3PayloadStore(clients.s3, config.payload_bucket) if config.payload_bucket else None
    store = DynamoDbExecutionStore(
        clients.dynamodb,
        config.executions_table,
        config.operations_table,
        config.coordination_table,
        config.subject_index_name,
        payloads=payloads,
        retention_days=config.retention_days,
    )
    engine_clock = clock or SystemClock()
    queue = SqsWorkQueue(clients.sqs, config.work_queue_url)
    wake_queue: WorkQueue = queue
    if config.direct_wake_ups:
        wake_queue = DirectWakeQueue(queue, clients.lambda_wake, config.wake_function_arn)
    timers = WakeScheduler(
        queue,
        clients.scheduler if config.schedule_group_name else None,
        config.schedule_group_name,
        config.scheduler_role_arn,
        config.work_queue_arn,
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
    return Engine(
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
    )


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


class StepwellClient:
    def __init__(
        self,
        config: StepwellConfig,
        clients: AwsClients | None = None,
        registry: Registry | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.config = config
        self.clients = clients or AwsClients(region=config.region or None)
        self.engine = build_engine(config, self.clients, registry or AnyWorkflowRegistry(), clock)

    @classmethod
    def from_client_config(cls, data: Mapping[str, Any], clients: AwsClients | None = None) -> StepwellClient:
        return cls(StepwellConfig.from_client_config(data), clients)

    @classmethod
    def from_config_file(cls, path: str | Path, clients: AwsClients | None = None) -> StepwellClient:
        return cls(StepwellConfig.from_file(path), clients)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, clients: AwsClients | None = None
    ) -> StepwellClient:
        return cls(StepwellConfig.from_env(environ), clients)

    # --- executions ---

    def start_execution(
        self,
        name: str,
        input: Any = None,
        execution_name: str | None = None,
        domain: str = "default",
        subject_id: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> str:
        """Start workflow `name` with up to 10 `tags`; idempotent on `execution_name` (a repeat keeps the
        first start's tags). Returns the execution id."""
        return self.engine.start_execution(name, input, execution_name, domain, subject_id, tags)

    def describe_execution(self, execution_id: str) -> dict[str, Any]:
        return self.engine.describe_execution(execution_id)

    def list_executions(
        self,
        status: ExecutionStatus | str | None = None,
        workflow: str | None = None,
        domain: str | None = None,
        subject_id: str | None = None,
        limit: int = 100,
        next_token: str | None = None,
        tag: tuple[str, str] | None = None,
    ) -> Page[ExecutionRecord]:
        """One page of executions: by status, by workflow, by domain (and subject), or by `tag` (key,
        value) within `domain` (default "default"), newest first, optionally of one status. Pass the
        page's `next_token` back for the next one."""
        return self.engine.list_executions(status, workflow, domain, subject_id, limit, next_token, tag)

    def get_execution_history(self, execution_id: str, **options: Any) -> list[dict[str, Any]]:
        """The execution's events in GetDurableExecutionHistory's vocabulary; `options` are
        Engine.get_execution_history's: include_execution_data, reverse_order, max_items, marker."""
        return self.engine.get_execution_history(execution_id, **options)

    def get_execution_history_page(self, execution_id: str, **options: Any) -> dict[str, Any]:
        """One page: {"Events": [...], "NextMarker": ...} (Engine.get_execution_history_page)."""
        return self.engine.get_execution_history_page(execution_id, **options)

    def stop_execution(self, execution_id: str, error: Mapping[str, Any] | None = None) -> bool:
        """Stop a running execution; False if it had already ended."""
        return self.engine.stop_execution(execution_id, error)

    # --- flow control ---

    def flow_status(self, workflow: str, key: str = "", domain: str = "default") -> dict[str, Any]:
        """One key of a flow-controlled workflow (or definition id): its concurrency limit with the running
        and waiting counts, the holders and the next waiting executions, and its rate limit with the recent
        starts and when the next may start (Engine.flow_status). `key` "" is the workflow without a key."""
        return self.engine.flow_status(workflow, key, domain)

    # --- code versions ---

    @property
    def functions(self) -> FunctionVersions | None:
        """The worker function's published versions (None: the config names no worker function)."""
        return self.engine.functions

    def list_versions(self) -> list[dict[str, Any]]:
        """The worker's published versions, oldest first: version, aliases, running (executions pinned to
        it that are still RUNNING), lastModified, description."""
        if self.functions is None:
            raise ConfigError(
                f"deployment {self.config.name!r} has no worker function configured (worker_function_name): "
                "versions are that function's"
            )
        return [
            {
                "version": published.version,
                "aliases": list(published.aliases),
                "running": self.engine.store.count_pinned(published.version),
                "lastModified": published.last_modified,
                "description": published.description,
            }
            for published in self.functions.list_versions()
        ]

    def upgrade_execution(self, execution_id: str, to_version: str) -> bool:
        """Move a running execution to `to_version` (a version number or an alias such as "live"): it
        replays on that code now, and its history records ExecutionUpgraded. False if it already is."""
        return self.engine.upgrade_execution(execution_id, to_version)

    def upgrade_executions(
        self, workflow_id: str, from_version: str, to_version: str, dry_run: bool = False
    ) -> list[str]:
        """Move every running execution of `workflow_id` pinned to `from_version` (a number: it may be a
        deleted version; or an alias) to `to_version`. Each move is conditional on the execution still
        being on `from_version`, so one a concurrent upgrade moved is skipped, not moved back. Returns the
        ids moved (with `dry_run`: those that would be)."""
        validate_workflow_name(workflow_id)
        for label, version in (("from_version", from_version), ("to_version", to_version)):
            if not isinstance(version, str) or not version:
                raise InvalidArgument(f"invalid {label} {version!r}: a version number or an alias name")
        target = self.engine.resolve_version(to_version)
        # A version number is taken as it is: executions may be pinned to one that was deleted.
        numbered = from_version.isascii() and from_version.isdigit()
        source = from_version if numbered else self.engine.resolve_version(from_version)
        pinned: list[str] = []
        token: str | None = None
        while True:
            page = self.engine.store.list_pinned(source, next_token=token)
            pinned += [each for each in page.items if ExecutionId.parse(each).workflow_id == workflow_id]
            token = page.next_token
            if token is None:
                break
        if dry_run:
            return pinned
        moved: list[str] = []
        for execution_id in pinned if source != target else []:
            if self.engine.move_execution(execution_id, target, expected=source):
                moved.append(execution_id)
        return moved

    # --- event-driven definitions ---

    def definitions(self) -> DefinitionsService:
        """Definitions and contexts of this deployment (put, get, list, delete, validate, graph)."""
        # Imported here: the definitions package builds on this module's engine wiring.
        from stepwell.definitions.service import DefinitionsService

        return DefinitionsService.for_client(self)

    def process_event(self, event: Mapping[str, Any], domain: str) -> dict[str, Any]:
        """Route one domain event for `domain` (the operator's choice, never the payload's alone: an
        event claiming another domain is rejected) as the worker does for the bus rule: start the
        definitions it triggers and resume the subject's contexts waiting for it. Returns what happened
        (started, resumed or the reason it was rejected)."""
        return self.definitions().process_event(event, domain).to_dict()

    # --- callbacks ---

    def send_callback_success(self, callback_id: str, result: Any = None) -> None:
        """Complete a callback. As with Lambda's SendDurableExecutionCallbackSuccess, the handler receives
        the result as text (the SDK's default callback serdes passes it through): a str or bytes result is
        sent as it is, any other value as its JSON text."""
        self.engine.send_callback_success(callback_id, callback_result_text(result))

    def send_callback_failure(self, callback_id: str, error: Mapping[str, Any] | None = None) -> None:
        self.engine.send_callback_failure(callback_id, error)

    def send_callback_heartbeat(self, callback_id: str) -> None:
        self.engine.send_callback_heartbeat(callback_id)

    def publish_callback_event(
        self,
        action: str,
        callback_id: str,
        result: Any = None,
        error: Mapping[str, Any] | None = None,
    ) -> str:
        """Send a callback command as an event on the deployment's bus (action: success, fail or
        heartbeat), with source stepwell.client: the worker applies it when the bus rule delivers it, and
        refuses a callback command from any other source. Returns the event id."""
        detail_type = CALLBACK_DETAIL_TYPES.get(action) if isinstance(action, str) else None
        if detail_type is None:
            raise InvalidArgument(
                f"callback action {action!r} is not one of {', '.join(CALLBACK_DETAIL_TYPES)}"
            )
        if not isinstance(callback_id, str) or not callback_id:
            raise InvalidArgument(f"invalid callback id {callback_id!r}: a non-empty string")
        if not self.config.event_bus_name:
            raise ValueError(f"deployment {self.config.name!r} has no event bus configured (event_bus_name)")
        detail: dict[str, Any] = {"callbackId": callback_id}
        if action == "success" and result is not None:
            detail["result"] = callback_result_text(result)
            # Refused here, as the worker would refuse it: the sender learns it, not the DLQ.
            self.engine.limits.callback_result.check("the callback result", detail["result"])
        if action == "fail" and error is not None:
            detail["error"] = check_error_object(error, "callback")
        response = self.clients.events.put_events(
            Entries=[
                {
                    "EventBusName": self.config.event_bus_name,
                    "Source": CALLBACK_EVENT_SOURCE,
                    "DetailType": detail_type,
                    "Detail": json.dumps(detail),
                }
            ]
        )
        entry = response["Entries"][0]
        if response.get("FailedEntryCount") or "EventId" not in entry:
            reason = f"{entry.get('ErrorCode')}: {entry.get('ErrorMessage')}"
            raise RuntimeError(f"the bus refused the {detail_type} event: {reason}")
        return entry["EventId"]

    # --- schedules ---

    def schedules(self) -> ScheduleManager:
        """The deployment's workflow schedules (stepwell.schedules): create, list, pause, resume, delete."""
        missing = [
            key
            for key in ("schedule_group_name", "scheduler_role_arn", "work_queue_arn")
            if not getattr(self.config, key)
        ]
        if missing:
            raise ConfigError(
                f"deployment {self.config.name!r} has no {', '.join(missing)}: schedules need them"
            )
        target = ScheduleTarget(
            self.config.schedule_group_name,
            self.config.work_queue_arn,
            self.config.scheduler_role_arn,
            self.config.kms_key_arn,
            self.config.dlq_arn,
        )
        return ScheduleManager(self.clients.scheduler, target)

    def create_schedule(self, name: str, workflow: str, expression: str, **options: Any) -> dict[str, Any]:
        """Start `workflow` on `expression`; `options`: input, timezone ("UTC"), overlap ("ALLOW" or
        "SKIP"), enabled (True). Returns the schedule as `list_schedules` shows it."""
        return self.schedules().create_schedule(name, workflow, expression, **options)

    def list_schedules(self, include_engine: bool = False) -> list[dict[str, Any]]:
        return self.schedules().list_schedules(include_engine)

    def pause_schedule(self, name: str) -> dict[str, Any]:
        return self.schedules().pause_schedule(name)

    def resume_schedule(self, name: str) -> dict[str, Any]:
        return self.schedules().resume_schedule(name)

    def delete_schedule(self, name: str) -> None:
        self.schedules().delete_schedule(name)

    # --- dead-letter queue ---

    def redrive_dlq(self, max_messages: int | None = None) -> RedriveResult:
        """Move the DLQ's messages back to the work queue (see stepwell.work_queue.redrive_dead_letters)."""
        if not self.config.dlq_url:
            raise ValueError(f"deployment {self.config.name!r} has no dead-letter queue configured (dlq_url)")
        return redrive_dead_letters(
            self.clients.sqs,
            self.config.dlq_url,
            self.config.work_queue_url,
            self.config.work_queue_arn,
            max_messages,
        )


def callback_result_text(result: Any) -> str | None:
    """A callback result as the text the handler receives: str and bytes as they are, else JSON."""
    if result is None or isinstance(result, str):
        return result
    if isinstance(result, bytes):
        try:
            return result.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidArgument(f"callback result must be UTF-8 text: {error}") from None
    try:
        return json.dumps(result, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as error:
        raise InvalidArgument(
            f"callback result is not JSON-serializable (nor are NaN and Infinity, nor values nested too "
            f"deeply): {error}"
        ) from error


def reject_json_constant(name: str) -> Any:
    """json.loads's parse_constant: NaN and Infinity, which Python's json accepts, are not JSON."""
    raise ValueError(f"{name} is not JSON (numbers must be finite)")
