"""`stepwell`: the command line for a deployed Stepwell.

The deployment comes from `--config FILE` (the JSON of `terraform output -json client_config`), else the
file named by STEPWELL_CONFIG, else the STEPWELL_* environment variables the worker uses.

    stepwell --config client_config.json start orders --input '{"order": 7}' --name order-7
    stepwell describe 'default#orders#order-7/order-7'     (the id `start` printed)
    stepwell describe order-7 --workflow orders            (the same execution, by its name)
    stepwell list --status RUNNING
    stepwell pause order-7 --workflow orders --reason "payments down"   (resume, delete likewise)
    stepwell history order-7 --workflow orders [--no-data] [--reverse] [--json]
    stepwell callback success CALLBACK_ID --result '{"approved": true}'   (JSON; --raw: any text)
    stepwell dlq redrive
    stepwell versions
    stepwell flow orders --key customer-42 [--domain default] [--json]
    stepwell executions upgrade 'default#orders#order-7/order-7' --to-version live
    stepwell executions upgrade --workflow orders --from-version 3 --to-version 4 --dry-run
    stepwell console --open                     (a local web page; needs the `console` extra)

The execution commands are also reachable under `stepwell executions` (`stepwell executions describe ID`).
An execution is addressed by its id, DOMAIN#WORKFLOW#SUBJECT/NAME, or by its NAME with --workflow (and
--domain and --subject when its start gave them).

Every error is one line on stderr, `stepwell: error: ...`, naming the bad value, with exit status 1 (2 for
a command line argparse cannot read); `--debug` shows the traceback of an unexpected one.

The commands and their options are stepwell.cli.parser's; this module runs them.

Definitions, contexts and domain events have their own commands (stepwell.cli.definitions):
`stepwell definitions ...`, `stepwell contexts ...`, `stepwell event ...`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from botocore.exceptions import BotoCoreError, ClientError

from stepwell.aws.clients import AwsClients
from stepwell.aws.work_queue import QueueError
from stepwell.cli import definitions as definitions_cli
from stepwell.cli import local as local_cli
from stepwell.cli.parser import (
    CONFIG_ENV,
    DEFAULT_DOMAIN,
    EXECUTION_ID_FORMAT,
    UsageError,
    build_parser,
    callback_ids_as_positionals,
)
from stepwell.client import StepwellClient, deployed_workflows
from stepwell.config import ConfigError, StepwellConfig
from stepwell.core.history import format_timeline
from stepwell.core.sdk_operations import fold_internal
from stepwell.errors import ExecutionNotFound, StepwellError
from stepwell.features.definitions.service import DefinitionsService
from stepwell.model import KEY_PART_PATTERN, KEY_PART_RULE, ExecutionId, make_execution_id
from stepwell.wiring.events import reject_json_constant

USAGE_EXIT_STATUS = 2
# Errors whose message is meant for the user: the CLI prints the message alone.
_USER_ERRORS = (ConfigError, StepwellError, QueueError, ValueError)


class CliError(Exception):
    """A user error the CLI reports on one line (exit status 1)."""


def _error_from(args: argparse.Namespace) -> dict[str, Any] | None:
    error = {
        key: value
        for key, value in (
            ("ErrorType", args.error_type),
            ("ErrorMessage", args.error_message),
            ("ErrorData", args.error_data),
        )
        if value is not None
    }
    return error or None


def load_config(path: str | None, environ: dict[str, str] | os._Environ[str] | None = None) -> StepwellConfig:
    env = os.environ if environ is None else environ
    chosen = path or env.get(CONFIG_ENV)
    if chosen:
        return StepwellConfig.from_file(chosen)
    try:
        return StepwellConfig.from_env(env)
    except ConfigError as error:
        raise ConfigError(
            f"no --config FILE, no ${CONFIG_ENV}, and the environment is incomplete: {error}"
        ) from error


def load_workflows(
    path: str | None, environ: dict[str, str] | os._Environ[str] | None = None
) -> tuple[str, ...] | None:
    """The deployment's workflow names, from the config file load_config read (client_config's
    `workflows`); None when it does not list them, or the config is the environment's."""
    env = os.environ if environ is None else environ
    chosen = path or env.get(CONFIG_ENV)
    if not chosen:
        return None
    return deployed_workflows(json.loads(Path(chosen).read_text(encoding="utf-8")))


def _read_input(args: argparse.Namespace, stdin: TextIO) -> Any:
    if args.input_file is not None:
        if args.input_file == "-":
            text = stdin.read()
        else:
            try:
                text = Path(args.input_file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise CliError(f"cannot read input file {args.input_file!r}: {error}") from error
        origin = f"input file {args.input_file!r}"
    elif args.input is not None:
        text, origin = args.input, "--input"
    else:
        return None
    return definitions_cli.load_json_text(text, origin)


def _stamp(epoch: float | None, timespec: str = "seconds") -> str:
    """An epoch time in ISO 8601, UTC ("2026-01-02T03:04:05Z"); "-" for none."""
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def _execution_id(args: argparse.Namespace) -> str:
    """The id EXECUTION names: an id as it is, or a NAME with --workflow (and --domain, --subject)."""
    text: str = args.execution
    given = [
        f"--{option}"
        for option, value in (
            ("workflow", args.workflow),
            ("domain", args.domain),
            ("subject", args.subject_id),
        )
        if value is not None
    ]
    if "#" in text or "/" in text:
        if given:
            raise CliError(
                f"{text!r} is an execution id, which holds its workflow, domain and subject: leave out "
                f"{', '.join(given)} (or give the execution's NAME with them)"
            )
        ExecutionId.parse(text)  # ValueError naming the format
        return text
    if args.workflow is None:
        raise CliError(
            f"{text!r} is not an execution id ({EXECUTION_ID_FORMAT}, as `stepwell start` prints it); to "
            "address an execution by its name, add --workflow WORKFLOW"
        )
    domain = args.domain or DEFAULT_DOMAIN
    for label, value in (("execution name", text), ("--domain", domain), ("--subject", args.subject_id)):
        if value is not None and not KEY_PART_PATTERN.match(value):
            raise CliError(f"invalid {label} {value!r}: {KEY_PART_RULE}")
    return make_execution_id(domain, args.workflow, args.subject_id or text, text)


def _not_found(args: argparse.Namespace, execution_id: str, error: ExecutionNotFound) -> Exception:
    """The error for an execution that is not there: for one named by NAME, what the name stood for."""
    if args.execution == execution_id:
        return error
    parts = ExecutionId.parse(execution_id)
    return CliError(
        f"no execution named {parts.instance_id!r} of workflow {parts.workflow_id!r} in domain "
        f"{parts.domain!r} with subject {parts.subject_id!r} (id {execution_id!r}); one started with another "
        f"--domain or --subject needs them here too (`stepwell list --workflow {parts.workflow_id}` lists "
        "the workflow's executions)"
    )


def _result_text(args: argparse.Namespace) -> str | None:
    """`callback success --result`: JSON text, checked unless --raw (else the workflow would meet a result
    its JSON serdes cannot read, long after this command said it was sent)."""
    text: str | None = args.result
    if text is None or args.raw:
        return text
    try:
        json.loads(text, parse_constant=reject_json_constant)
    except ValueError as error:  # json.JSONDecodeError is a ValueError too
        raise CliError(
            f"--result is not JSON ({error}): {text[:100]!r}; write a string as JSON "
            f"(--result {json.dumps(json.dumps(text[:40]))}), or add --raw to send the text as it is"
        ) from None
    except RecursionError:
        raise CliError("--result is JSON nested too deeply; add --raw to send it unchecked") from None
    return text


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON-serializable")


def _print_json(value: Any, out: TextIO) -> None:
    out.write(json.dumps(value, indent=2, default=_json_default) + "\n")


def run(args: argparse.Namespace, client: StepwellClient, out: TextIO, stdin: TextIO) -> int:
    command = args.executions_command if args.command == "executions" else args.command
    if command == "console":
        _console(args, client, out)
    elif command == "upgrade":
        _upgrade(args, client, out)
    elif command == "versions":
        _versions(args, client, out)
    elif command == "flow":
        _flow(args, client, out)
    elif command == "start":
        tags: dict[str, str] = {}
        for text in args.tags or []:
            key, value = _tag_argument(text)
            if key in tags:
                raise CliError(f"--tag {text!r}: tag {key!r} is given twice")
            tags[key] = value
        execution_id = client.start_execution(
            args.workflow,
            _read_input(args, stdin),
            args.execution_name,
            args.domain,
            subject_id=args.subject_id,
            tags=tags,
            trace_header=args.trace_header,
        )
        out.write(execution_id + "\n")
    elif command in ("describe", "history", "stop", "pause", "resume", "delete"):
        execution_id = _execution_id(args)
        try:
            _execution_command(command, args, client, execution_id=execution_id, out=out)
        except ExecutionNotFound as error:
            raise _not_found(args, execution_id, error) from None
    elif command == "list":
        _list(args, client, out)
    elif command == "callback":
        _callback(args, client, out)
    elif command == "schedules":
        _schedules(args, client, out)
    elif command == "dlq":
        result = client.redrive_dlq(args.max_messages)
        if result.method == "move-task":
            out.write(f"redrive started (SQS message move task {result.task_handle})\n")
        else:
            out.write(f"moved {result.moved} messages from the DLQ to the work queue\n")
    return 0


def _execution_command(
    command: str, args: argparse.Namespace, client: StepwellClient, *, execution_id: str, out: TextIO
) -> None:
    if command == "describe":
        description = client.describe_execution(execution_id)
        for holder, key in _DESCRIBED_TIMES:
            times = description.get(holder, {}) if holder else description
            if isinstance(times.get(key), int | float):
                times[key] = _stamp(times[key], "milliseconds")
        _print_json(description, out)
    elif command in ("pause", "resume", "delete"):
        _lifecycle_command(command, args, client, execution_id=execution_id, out=out)
    elif command == "history":
        events = client.get_execution_history(
            execution_id, include_execution_data=not args.no_data, reverse_order=args.reverse
        )
        if args.json:
            _print_json(events, out)
        else:
            out.write(format_timeline(events if args.all else fold_internal(events)) + "\n")
    else:
        stopped = client.stop_execution(execution_id, _error_from(args))
        out.write(f"{execution_id}: {'stopped' if stopped else 'had already ended'}\n")


# The times `describe` prints in ISO 8601: (the member holding them, or "" for the description, the key).
_DESCRIBED_TIMES = (
    ("", "StartTimestamp"),
    ("", "EndTimestamp"),
    ("", "ExpectedExecutionTimeoutTimestamp"),
    ("PauseDetails", "PauseRequestTimestamp"),
)


def _lifecycle_command(
    command: str, args: argparse.Namespace, client: StepwellClient, *, execution_id: str, out: TextIO
) -> None:
    """pause, resume, delete: what changed, in one line."""
    if command == "pause":
        paused = client.pause_execution(execution_id, args.reason, not args.timeout_keeps_running)
        status = client.describe_execution(execution_id)["Status"]
        out.write(f"{execution_id}: {'pausing' if paused else 'was paused already'} (now {status})\n")
    elif command == "resume":
        resumed = client.resume_execution(execution_id, args.reason)
        out.write(f"{execution_id}: {'resumed' if resumed else 'was not paused'}\n")
    else:
        requested_at = client.delete_execution(execution_id)
        out.write(
            f"{execution_id}: deleting (requested {_stamp(requested_at)}); its items and payloads are being "
            "removed\n"
        )


def _callback(args: argparse.Namespace, client: StepwellClient, out: TextIO) -> None:
    action = args.callback_action
    result = _result_text(args) if action == "success" else None
    if args.via_bus:
        error = _error_from(args) if action == "fail" else None
        event_id = client.publish_callback_event(action, args.callback_id, result, error)
        out.write(f"callback {args.callback_id}: {action} published as event {event_id}\n")
        return
    if action == "success":
        client.send_callback_success(args.callback_id, result)
    elif action == "fail":
        client.send_callback_failure(args.callback_id, _error_from(args))
    else:
        client.send_callback_heartbeat(args.callback_id)
    out.write(f"callback {args.callback_id}: {action} sent\n")


def _tag_argument(text: str) -> tuple[str, str]:
    """KEY=VALUE of --tag, split at the first '='."""
    key, sep, value = text.partition("=")
    if not sep:
        raise CliError(f"--tag {text!r} is not KEY=VALUE")
    return key, value


def _check_list_filter(args: argparse.Namespace) -> None:
    """`list` takes one of --status, --workflow, --domain, or --tag with optional --domain and --status."""
    if (args.executions_command if args.command == "executions" else args.command) != "list":
        return
    see = f"(see 'stepwell {'executions ' if args.command == 'executions' else ''}list --help')"
    if args.tag is not None:
        if args.workflow is not None or args.subject_id is not None:
            raise UsageError(
                f"--tag lists within --domain, optionally by --status; not with --workflow or --subject {see}"
            )
        return
    chosen = [f"--{name}" for name in ("status", "workflow", "domain") if getattr(args, name) is not None]
    if not chosen:
        raise UsageError(f"one of the arguments --status --workflow --domain --tag is required {see}")
    if len(chosen) > 1:
        raise UsageError(f"argument {chosen[1]}: not allowed with argument {chosen[0]} {see}")


def _list(args: argparse.Namespace, client: StepwellClient, out: TextIO) -> None:
    if args.subject_id is not None and args.domain is None:
        raise CliError("--subject filters within a domain: pass --domain too")
    definitions_cli.check_limit(args.limit)
    tag = _tag_argument(args.tag) if args.tag is not None else None
    token = args.next_token
    rows: list[dict[str, Any]] = []
    while True:
        page = client.list_executions(
            status=args.status,
            workflow=args.workflow,
            domain=args.domain,
            subject_id=args.subject_id,
            limit=args.limit,
            next_token=token,
            tag=tag,
        )
        rows.extend(
            {
                "ExecutionId": record.execution_id,
                "ExecutionName": record.execution_name,
                "Status": record.status.value,
                "WorkflowName": record.workflow_id,
                "StartTimestamp": _stamp(record.created_at),
                "EndTimestamp": _stamp(record.ended_at),
            }
            for record in page.items
        )
        token = page.next_token
        if not args.all or token is None:
            break
    if args.json:
        _print_json({"Executions": rows, "NextToken": token}, out)
        return
    if rows:
        _table(out, [list(LIST_COLUMNS)] + [[str(row[key]) for key in LIST_COLUMNS.values()] for row in rows])
    if token is not None:
        out.write(f"more: --next-token {token}\n")


# `list`'s table: header, then the row's key. Times are UTC; ENDED is "-" while it runs.
LIST_COLUMNS = {
    "STATUS": "Status",
    "STARTED": "StartTimestamp",
    "ENDED": "EndTimestamp",
    "WORKFLOW": "WorkflowName",
    "NAME": "ExecutionName",
    "EXECUTION ID": "ExecutionId",
}


def _table(out: TextIO, lines: list[list[str]]) -> None:
    """Columns two spaces apart, each as wide as its widest cell; the last one is not padded."""
    widths = [max(len(line[index]) for line in lines) for index in range(len(lines[0]) - 1)]
    for line in lines:
        out.write(
            "  ".join([*(cell.ljust(width) for cell, width in zip(line, widths, strict=False)), line[-1]])
        )
        out.write("\n")


def _upgrade(args: argparse.Namespace, client: StepwellClient, out: TextIO) -> None:
    if args.execution is None and args.workflow is None:
        raise CliError(
            "give an EXECUTION (an id, or a NAME with --workflow) or --workflow WORKFLOW --from-version V"
        )
    if args.execution is not None:
        if args.from_version is not None or args.dry_run:
            raise CliError("--from-version and --dry-run go with --workflow alone, not with an EXECUTION")
        execution_id = _execution_id(args)
        # Resolved once (an alias names a number), so the line says which version it runs on now.
        target = client.engine.resolve_version(args.to_version)
        try:
            upgraded = client.upgrade_execution(execution_id, target)
        except ExecutionNotFound as error:
            raise _not_found(args, execution_id, error) from None
        verb = "upgraded to" if upgraded else "already on"
        out.write(f"{execution_id}: {verb} version {target}\n")
        return
    if args.domain is not None or args.subject_id is not None:
        raise CliError("--domain and --subject go with an execution's NAME, not with --workflow alone")
    if args.from_version is None:
        raise CliError("--workflow needs --from-version: the version its executions run on now")
    target = client.engine.resolve_version(args.to_version)
    moved = client.upgrade_executions(args.workflow, args.from_version, target, args.dry_run)
    for execution_id in moved:
        out.write(execution_id + "\n")
    verb = "would upgrade" if args.dry_run else "upgraded"
    out.write(
        f"{verb} {len(moved)} running executions of {args.workflow!r} from version {args.from_version} to "
        f"version {target}\n"
    )


# The web layer of `stepwell console` (the `console` extra): missing, the command names the extra.
_CONSOLE_PACKAGES = frozenset({"flask", "werkzeug", "jinja2", "markupsafe", "itsdangerous", "blinker"})


def _console(args: argparse.Namespace, client: StepwellClient, out: TextIO) -> None:
    try:
        from stepwell.console.server import serve
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in _CONSOLE_PACKAGES:
            raise
        raise CliError(
            f"the console needs the 'console' extra ({error.name} is not installed): "
            "pip install 'stepwell[console]'"
        ) from error
    serve(client, out, host=args.host, port=args.port, open_browser=args.open, allow_remote=args.allow_remote)


def _versions(args: argparse.Namespace, client: StepwellClient, out: TextIO) -> None:
    versions = client.list_versions()
    if args.json:
        _print_json({"Versions": versions}, out)
        return
    out.write(f"{'VERSION':<8} {'ALIASES':<12} {'RUNNING':>7}  LAST-MODIFIED\n")
    for each in versions:
        aliases = ",".join(each["aliases"]) or "-"
        out.write(f"{each['version']:<8} {aliases:<12} {each['running']:>7}  {each['lastModified'] or '-'}\n")


def _flow(args: argparse.Namespace, client: StepwellClient, out: TextIO) -> None:
    status = client.flow_status(args.workflow, args.key, args.domain)
    if args.json:
        _print_json(status, out)
        return
    key = repr(status["key"]) if status["key"] else "none (the whole workflow)"
    out.write(f"workflow {status['workflow']!r} in domain {status['domain']!r}, key {key}\n")
    concurrency, rate = status["concurrency"], status["rate"]
    if concurrency is None:
        out.write("concurrency: no state (no execution has been counted under this key)\n")
    else:
        out.write(
            f"concurrency: limit {concurrency['limit']}, running {concurrency['running']}, "
            f"waiting {concurrency['waiting']}\n"
        )
        for execution_id in concurrency["holders"]:
            out.write(f"  running  {execution_id}\n")
        for execution_id in concurrency["next"]:
            out.write(f"  next     {execution_id}\n")
    if rate is None:
        out.write("rate: no state (no start has been counted under this key)\n")
    else:
        # nextStartAt is the status's own "now" when a start may go at once.
        free = rate["nextStartAt"] <= client.engine.clock.now()
        out.write(
            f"rate: limit {rate['limit']} per {rate['period']}s, {rate['recentStarts']} started in the last "
            f"{rate['period']}s, {rate['delayed']} delayed, "
            f"next start {'now' if free else _stamp(rate['nextStartAt'])}\n"
        )


def _schedules(args: argparse.Namespace, client: StepwellClient, out: TextIO) -> None:
    action = args.schedules_command
    if action == "create":
        input_value = definitions_cli.load_json_text(args.input, "--input") if args.input is not None else {}
        created = client.create_schedule(
            args.name,
            args.workflow,
            args.expression,
            input=input_value,
            timezone=args.timezone,
            overlap=args.overlap,
            enabled=not args.disabled,
        )
        out.write(f"schedule {created['name']}: created ({created['state']})\n")
    elif action == "list":
        listed = client.list_schedules(include_engine=args.all)
        if args.json:
            _print_json({"Schedules": listed}, out)
            return
        rows = [["NAME", "STATE", "EXPRESSION", "TIME ZONE", "OVERLAP", "WORKFLOW"]]
        for each in listed:
            engine = each["kind"] == "engine"  # a one-time wake-up: no workflow, overlap or zone of its own
            rows.append(
                [
                    each["name"],
                    each["state"] or "-",
                    each.get("expression") or "-",
                    "-" if engine else each["timezone"],
                    "-" if engine else each["overlap"],
                    "(engine wake-up)" if engine else each["workflow"],
                ]
            )
        if listed:
            _table(out, rows)
    elif action == "delete":
        client.delete_schedule(args.name)
        out.write(f"schedule {args.name}: deleted\n")
    else:
        changed = client.pause_schedule(args.name) if action == "pause" else client.resume_schedule(args.name)
        out.write(f"schedule {args.name}: {changed['state']}\n")


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    stdout = out or sys.stdout
    stderr = err or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(callback_ids_as_positionals(parser, sys.argv[1:] if argv is None else argv))
        _check_list_filter(args)
    except UsageError as error:
        stderr.write(f"stepwell: error: {_one_line(error)}\n")
        return USAGE_EXIT_STATUS
    if args.command == "local":  # runs a local stack: no deployment to reach yet
        return local_cli.run(args, stdout, stderr)
    clients: list[StepwellClient] = []

    def client() -> StepwellClient:
        # Built on first use: some commands (definitions validate / graph FILE) need no deployment.
        if not clients:
            config = load_config(args.config)
            aws = AwsClients(region=args.region or config.region or None, endpoint_url=args.endpoint_url)
            clients.append(StepwellClient(config, aws, workflows=load_workflows(args.config)))
        return clients[0]

    try:
        if args.command in definitions_cli.COMMANDS:
            definitions_cli.run(
                args, lambda: DefinitionsService.for_client(client()), stdout, sys.stdin, err=stderr
            )
            return 0
        return run(args, client(), stdout, sys.stdin)
    except Exception as error:
        if args.debug:
            raise
        stderr.write(f"stepwell: error: {_error_line(error)}\n")
        return 1


def _error_line(error: Exception) -> str:
    if isinstance(error, (CliError, definitions_cli.DefinitionsCliError, *_USER_ERRORS)):
        return _one_line(error)
    if isinstance(error, (ClientError, BotoCoreError)):
        return f"AWS request failed: {_one_line(error)}"
    return f"unexpected {type(error).__name__}: {_one_line(error)} (run with --debug for the traceback)"


if __name__ == "__main__":
    raise SystemExit(main())
