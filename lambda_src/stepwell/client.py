"""The Python client for operators and users of a deployed Stepwell.

Built from the module's `client_config` output (a dict, or the JSON file `terraform output -json
client_config` writes) or from the worker's environment variables. It runs the engine's API (start,
describe, list, history, callbacks, stop, pause, resume and delete, upgrades to another code version, flow
control status) directly
on the deployment's tables and queue, lists the worker's code versions, and redrives the dead-letter queue.

    client = StepwellClient.from_config_file("client_config.json")
    execution_id = client.start_execution("orders", {"order": 7}, execution_name="order-7")
    print(client.describe_execution(execution_id)["Status"])

When the config lists the deployment's workflows (`workflows`, from the module's `workflow_names`), a start
or a schedule of any other is refused at once, naming them; without the list every valid name is sent and
the worker fails an execution whose workflow it does not have.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepwell.aws.clients import AwsClients
from stepwell.aws.work_queue import RedriveResult, redrive_dead_letters
from stepwell.config import ConfigError, StepwellConfig
from stepwell.core.engine import check_error_object
from stepwell.core.invoke_targets import Handler
from stepwell.core.registry import Registry, validate_workflow_name
from stepwell.errors import InvalidArgument, InvalidWorkflowName, WorkflowNotFound
from stepwell.features.schedules import ScheduleManager, ScheduleTarget
from stepwell.model import ExecutionId, ExecutionRecord, ExecutionStatus, Page
from stepwell.ports import Clock, FunctionVersions
from stepwell.wiring.build import AnyWorkflowRegistry, build_engine, deployment_arns
from stepwell.wiring.events import CALLBACK_DETAIL_TYPES, CALLBACK_EVENT_SOURCE, callback_result_text

if TYPE_CHECKING:
    from stepwell.features.definitions.service import DefinitionsService


WORKFLOWS_KEY = "workflows"


def deployed_workflows(data: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The `workflows` of a client_config (the object, {"value": {...}} or all outputs, as
    StepwellConfig.from_client_config reads it): the deployment's workflow names, or None when it does not
    list them. ConfigError for anything but a list of workflow names."""
    if "name" not in data and isinstance(data.get("client_config"), Mapping):
        data = data["client_config"]
    if "name" not in data and isinstance(data.get("value"), Mapping):
        data = data["value"]
    names = data.get(WORKFLOWS_KEY)
    if names is None:
        return None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ConfigError(f"client_config[{WORKFLOWS_KEY!r}] must be a list of workflow names, got {names!r}")
    for name in names:
        try:
            validate_workflow_name(name)
        except InvalidWorkflowName as error:
            raise ConfigError(f"client_config[{WORKFLOWS_KEY!r}]: {error}") from None
    return tuple(names)


class DeployedWorkflowRegistry(AnyWorkflowRegistry):
    """The client's registry when the config lists the deployment's workflows: those names (and the
    definitions' interpreter, which starts their contexts) may be started; any other is refused at the
    start, naming the deployment's workflows, instead of failing later in the worker."""

    def __init__(self, deployment: str, workflows: Iterable[str]) -> None:
        super().__init__()
        self._deployment = deployment
        self._workflows = frozenset(workflows)

    def __contains__(self, name: object) -> bool:
        return name in self._workflows or name in self.names()

    def names(self) -> list[str]:
        return sorted(self._workflows.union(super().names()))

    def get(self, name: str) -> Handler:
        if name not in self:
            raise self.refusal(name)
        return super().get(name)

    def refusal(self, name: str) -> WorkflowNotFound:
        listed = ", ".join(sorted(self._workflows)) or "none"
        return WorkflowNotFound(
            f"deployment {self._deployment!r} has no workflow {name!r}; its workflows: {listed} "
            "(client_config's workflows, from the module's workflow_names)"
        )


class StepwellClient:
    def __init__(
        self,
        config: StepwellConfig,
        clients: AwsClients | None = None,
        *,
        registry: Registry | None = None,
        clock: Clock | None = None,
        workflows: Iterable[str] | None = None,
    ) -> None:
        """`workflows`: the deployment's workflow names (client_config's `workflows`): a start or a
        schedule of another is refused. None: every valid name may be started. A `registry` (the workflow
        code itself) decides instead. `clock` stamps starts, stops and callbacks; by default the system clock,
        or a local stack's virtual clock when STEPWELL_CLOCK_OFFSET_FILE names its file (stepwell.clock)."""
        self.config = config
        self.clients = clients or AwsClients(region=config.region or None)
        if registry is None:
            registry = (
                AnyWorkflowRegistry()
                if workflows is None
                else DeployedWorkflowRegistry(config.name, workflows)
            )
        self.engine = build_engine(config, self.clients, registry, clock)
        # Where the deployment's execution ARNs live (None: the config names no resource ARN).
        self.arns = deployment_arns(config)

    @classmethod
    def from_client_config(
        cls, data: Mapping[str, Any], clients: AwsClients | None = None, clock: Clock | None = None
    ) -> StepwellClient:
        return cls(
            StepwellConfig.from_client_config(data), clients, clock=clock, workflows=deployed_workflows(data)
        )

    @classmethod
    def from_config_file(cls, path: str | Path, clients: AwsClients | None = None) -> StepwellClient:
        config = StepwellConfig.from_file(path)  # its errors name the file; it read the same JSON
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(config, clients, workflows=deployed_workflows(data))

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
        *,
        subject_id: str | None = None,
        tags: Mapping[str, str] | None = None,
        trace_header: str | None = None,
    ) -> str:
        """Start workflow `name` with up to 10 `tags`; idempotent on `execution_name` (a repeat keeps the
        first start's tags and trace). `trace_header`: an X-Ray tracing header
        (`Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=1`) whose trace the execution joins
        (docs/reference/traces.md); a malformed one refuses the start with InvalidArgument naming the
        format; None: a fresh trace. Returns the execution id."""
        return self.engine.start_execution(
            name, input, execution_name, domain, subject_id=subject_id, tags=tags, trace_header=trace_header
        )

    def describe_execution(self, execution_id: str) -> dict[str, Any]:
        """The execution as the engine describes it, with `executionArn`: its ARN as AWS's durable
        execution API answers it and its handlers' log records name it (stepwell.core.arns), when the
        config names the deployment's account (its resources' ARNs)."""
        described = self.engine.describe_execution(execution_id)
        if self.arns is not None:
            described["executionArn"] = self.arns.execution_arn(described["ExecutionId"])
        return described

    def list_executions(
        self,
        status: ExecutionStatus | str | None = None,
        workflow: str | None = None,
        *,
        domain: str | None = None,
        subject_id: str | None = None,
        limit: int = 100,
        next_token: str | None = None,
        tag: tuple[str, str] | None = None,
    ) -> Page[ExecutionRecord]:
        """One page of executions: by status, by workflow, by domain (and subject), or by `tag` (key,
        value) within `domain` (default "default"), newest first, optionally of one status. Pass the
        page's `next_token` back for the next one."""
        return self.engine.list_executions(
            status,
            workflow,
            domain=domain,
            subject_id=subject_id,
            limit=limit,
            next_token=next_token,
            tag=tag,
        )

    def get_execution_history(self, execution_id: str, **options: Any) -> list[dict[str, Any]]:
        """The execution's events in GetDurableExecutionHistory's vocabulary; `options` are
        Engine.get_execution_history's: include_execution_data, reverse_order, max_items, marker."""
        return self.engine.get_execution_history(execution_id, **options)

    def get_execution_history_page(self, execution_id: str, **options: Any) -> dict[str, Any]:
        """One page: {"Events": [...], "NextMarker": ...} (Engine.get_execution_history_page)."""
        return self.engine.get_execution_history_page(execution_id, **options)

    def stop_execution(self, execution_id: str, error: Mapping[str, Any] | None = None) -> bool:
        """Stop a running (or paused) execution; False if it had already ended."""
        return self.engine.stop_execution(execution_id, error)

    def pause_execution(
        self, execution_id: str, reason: str | None = None, timeout_paused: bool = True
    ) -> bool:
        """Pause a running execution (AWS's PauseDurableExecution): PAUSING until a run in flight reaches
        its next checkpoint, then PAUSED; nothing is invoked until it is resumed, while its waits and
        callbacks still complete. `timeout_paused` False: its execution timeout keeps running. False when
        it is paused already; ExecutionStateConflict when it has ended."""
        return self.engine.pause_execution(execution_id, reason, timeout_paused)

    def resume_execution(self, execution_id: str, reason: str | None = None) -> bool:
        """Resume a paused execution (AWS's ResumeDurableExecution): its handler runs again when work is
        due. False when it is not paused; ExecutionStateConflict when it has ended."""
        return self.engine.resume_execution(execution_id, reason)

    def delete_execution(self, execution_id: str) -> float:
        """Delete an ended execution with its history and payloads (AWS's DeleteDurableExecution): it is
        DELETING until the worker has removed them, then gone. Returns when the deletion was requested
        (epoch seconds); ExecutionStateConflict when it has not ended."""
        return self.engine.delete_execution(execution_id)

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
        from stepwell.features.definitions.service import DefinitionsService

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
        """The deployment's workflow schedules (stepwell.features.schedules): create, list, pause,
        resume, delete."""
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
            group_name=self.config.schedule_group_name,
            work_queue_arn=self.config.work_queue_arn,
            role_arn=self.config.scheduler_role_arn,
            kms_key_arn=self.config.kms_key_arn,
            dead_letter_arn=self.config.dlq_arn,
        )
        return ScheduleManager(self.clients.scheduler, target)

    def create_schedule(self, name: str, workflow: str, expression: str, **options: Any) -> dict[str, Any]:
        """Start `workflow` on `expression`; `options`: input, timezone ("UTC"), overlap ("ALLOW" or
        "SKIP"), enabled (True). Returns the schedule as `list_schedules` shows it."""
        registry = self.engine.registry
        if isinstance(registry, DeployedWorkflowRegistry) and workflow not in registry:
            raise registry.refusal(workflow)  # else each firing would fail in the worker
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
        """Move the DLQ's messages back to the work queue (see
        stepwell.aws.work_queue.redrive_dead_letters)."""
        if not self.config.dlq_url:
            raise ValueError(f"deployment {self.config.name!r} has no dead-letter queue configured (dlq_url)")
        return redrive_dead_letters(
            self.clients.sqs,
            self.config.dlq_url,
            work_queue_url=self.config.work_queue_url,
            work_queue_arn=self.config.work_queue_arn,
            max_messages=max_messages,
        )
