"""`stepwell`: the command line for a deployed Stepwell.

The deployment comes from `--config FILE` (the JSON of `terraform output -json client_config`), else the
file named by STEPWELL_CONFIG, else the STEPWELL_* environment variables the worker uses.

    stepwell --config client_config.json start orders --input '{"order": 7}' --name order-7
    stepwell describe 'default#orders#order-7/order-7'
    stepwell list --status RUNNING
    stepwell history 'default#orders#order-7/order-7' [--no-data] [--reverse] [--json]
    stepwell callback success CALLBACK_ID --result '{"approved": true}'
    stepwell dlq redrive
    stepwell versions
    stepwell flow orders --key customer-42 [--domain default] [--json]
    stepwell executions upgrade 'default#orders#order-7/order-7' --to-version live
    stepwell executions upgrade --workflow orders --from-version 3 --to-version 4 --dry-run
    stepwell console --open                     (a local web page; needs the `console` extra)

The execution commands are also reachable under `stepwell executions` (`stepwell executions describe ID`).

Every error is one line on stderr, `stepwell: error: ...`, naming the bad value, with exit status 1 (2 for
a command line argparse cannot read); `--debug` shows the traceback of an unexpected one.

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
from typing import Any, NoReturn, TextIO

from botocore.exceptions import BotoCoreError, ClientError

from stepwell.aws.clients import AwsClients
from stepwell.aws.work_queue import QueueError
from stepwell.cli import definitions as definitions_cli
from stepwell.cli import local as local_cli
from stepwell.client import StepwellClient, deployed_workflows
from stepwell.config import ConfigError, StepwellConfig
from stepwell.core.history import format_timeline
from stepwell.errors import StepwellError
from stepwell.features.definitions.service import DefinitionsService
from stepwell.model import ExecutionStatus

CONFIG_ENV = "STEPWELL_CONFIG"
USAGE_EXIT_STATUS = 2
CALLBACK_ID_HELP = "the callback id (one starting with '-' works too)"
# Errors whose message is meant for the user: the CLI prints the message alone.
_USER_ERRORS = (ConfigError, StepwellError, QueueError, ValueError)
MAX_PORT = 65535


class CliError(Exception):
    """A user error the CLI reports on one line (exit status 1)."""


class UsageError(Exception):
    """The command line does not parse (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line as one line (its default prints the usage first)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _port(text: str) -> int:
    """--port: a TCP port, 0..65535 (0: any free one)."""
    if not (text.isascii() and text.isdigit() and len(text) <= 5) or int(text) > MAX_PORT:
        raise argparse.ArgumentTypeError(f"port must be a whole number 0..{MAX_PORT}, got {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="stepwell", description="Operate a deployed Stepwell workflow engine.")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help=f"client_config JSON (terraform output -json client_config); default: ${CONFIG_ENV} or the "
        "STEPWELL_* environment",
    )
    parser.add_argument("--region", help="AWS region (default: the config's, else the AWS environment)")
    parser.add_argument(
        "--endpoint-url", metavar="URL", help="AWS endpoint, e.g. a local AWS (default: $AWS_ENDPOINT_URL)"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_execution_commands(commands)
    executions = commands.add_parser(
        "executions", help="the execution commands (start, describe, list, history, stop), and upgrade"
    )
    execution_commands = executions.add_subparsers(dest="executions_command", required=True, metavar="ACTION")
    _add_execution_commands(execution_commands)
    upgrade = execution_commands.add_parser(
        "upgrade", help="move running executions to another code version (recorded in their history)"
    )
    upgrade.add_argument("execution_id", nargs="?", help="the execution to move (or --workflow)")
    upgrade.add_argument("--workflow", help="move every running execution of this workflow on --from-version")
    upgrade.add_argument("--from-version", metavar="V", help="with --workflow: the version they run on now")
    upgrade.add_argument(
        "--to-version", metavar="V", required=True, help="a version number, or an alias ('live': the newest)"
    )
    upgrade.add_argument("--dry-run", action="store_true", help="with --workflow: list them, move nothing")

    versions = commands.add_parser(
        "versions", help="the worker's code versions and the running executions pinned to each"
    )
    versions.add_argument("--json", action="store_true", help="print JSON instead of a table")

    callback = commands.add_parser("callback", help="complete, fail or extend a callback")
    callback_commands = callback.add_subparsers(dest="callback_command", required=True, metavar="ACTION")
    success = callback_commands.add_parser("success", help="complete the callback with a result")
    success.add_argument("callback_id", help=CALLBACK_ID_HELP)
    success.add_argument("--result", help="result text the workflow receives (usually JSON)")
    fail = callback_commands.add_parser("fail", help="fail the callback")
    fail.add_argument("callback_id", help=CALLBACK_ID_HELP)
    _add_error_arguments(fail)
    heartbeat = callback_commands.add_parser("heartbeat", help="send a heartbeat for the callback")
    heartbeat.add_argument("callback_id", help=CALLBACK_ID_HELP)
    for action in (success, fail, heartbeat):
        action.add_argument(
            "--via-bus", action="store_true", help="send it as an event on the deployment's bus instead"
        )

    dlq = commands.add_parser("dlq", help="dead-letter queue")
    dlq_commands = dlq.add_subparsers(dest="dlq_command", required=True, metavar="ACTION")
    redrive = dlq_commands.add_parser("redrive", help="move the DLQ's messages back to the work queue")
    redrive.add_argument("--max", dest="max_messages", type=int, help="move at most this many (done here)")
    console = commands.add_parser(
        "console",
        help="serve the web console here (the 'console' extra)",
        description="Serve the web console. Every request needs its token: open the URL it prints "
        "(.../?token=...). The token is random, or STEPWELL_CONSOLE_TOKEN's value (16+ URL-safe characters).",
    )
    console.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    console.add_argument("--port", type=_port, default=8080, help="port (default: %(default)s; 0: any free)")
    console.add_argument("--open", action="store_true", help="open it in the default web browser")
    console.add_argument(
        "--allow-remote", action="store_true", help="allow a --host other machines reach (it acts as you)"
    )
    flow = commands.add_parser(
        "flow", help="a workflow's flow control for one key: its limits, running and waiting executions"
    )
    flow.add_argument("workflow", help="registered workflow name, or a definition's id")
    flow.add_argument("--key", default="", help="the key's value (default: none, the whole workflow)")
    flow.add_argument("--domain", default="default", help="domain (default: %(default)s)")
    flow.add_argument("--json", action="store_true", help="print JSON instead of text")
    _add_schedule_commands(commands)
    definitions_cli.add_commands(commands)
    local_cli.add_commands(commands)
    return parser


def _add_execution_commands(commands: Any) -> None:
    """start, describe, list, history, stop: at the top level and under `executions`."""
    start = commands.add_parser("start", help="start an execution of a registered workflow")
    start.add_argument("workflow", help="registered workflow name")
    source = start.add_mutually_exclusive_group()
    source.add_argument("--input", metavar="JSON", help="input as JSON text (default: null)")
    source.add_argument("--input-file", metavar="FILE", help="read the JSON input from FILE ('-' for stdin)")
    start.add_argument("--name", dest="execution_name", help="execution name (starting it again is a no-op)")
    start.add_argument("--domain", default="default", help="domain (default: %(default)s)")
    start.add_argument("--subject", dest="subject_id", help="subject id (default: the execution name)")
    start.add_argument(
        "--tag",
        dest="tags",
        action="append",
        metavar="KEY=VALUE",
        help="tag the execution (repeatable, at most 10; split at the first '=')",
    )

    describe = commands.add_parser("describe", help="show an execution as JSON")
    describe.add_argument("execution_id")

    listing = commands.add_parser(
        "list", help="list executions by status, workflow, domain and subject, or tag (see --tag)"
    )
    # One of status, workflow or domain; --tag combines with --domain and --status (_check_list_filter).
    listing.add_argument("--status", choices=[status.value for status in ExecutionStatus])
    listing.add_argument("--workflow", help="workflow name")
    listing.add_argument("--domain", help="domain (optionally with --subject)")
    listing.add_argument(
        "--tag",
        metavar="KEY=VALUE",
        help="executions with this tag in --domain (default: default), newest first; --status filters",
    )
    listing.add_argument("--subject", dest="subject_id", help="subject id within --domain")
    listing.add_argument("--limit", type=int, default=50, help="executions per page (default: %(default)s)")
    listing.add_argument("--next-token", help="continue from a previous page")
    listing.add_argument("--all", action="store_true", help="follow every page")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")

    history = commands.add_parser("history", help="show an execution's events as a timeline")
    history.add_argument("execution_id")
    history.add_argument("--json", action="store_true", help="print the events as JSON")
    history.add_argument(
        "--no-data", action="store_true", help="leave out inputs, results and errors (marked Truncated)"
    )
    history.add_argument("--reverse", action="store_true", help="newest event first")

    stop = commands.add_parser("stop", help="stop a running execution")
    stop.add_argument("execution_id")
    _add_error_arguments(stop)


def _add_error_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--error-type", help="ErrorType")
    parser.add_argument("--error-message", help="ErrorMessage")
    parser.add_argument("--error-data", help="ErrorData")


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


def _stamp(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


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
            args.workflow, _read_input(args, stdin), args.execution_name, args.domain, args.subject_id, tags
        )
        out.write(execution_id + "\n")
    elif command == "describe":
        _print_json(client.describe_execution(args.execution_id), out)
    elif command == "list":
        _list(args, client, out)
    elif command == "history":
        events = client.get_execution_history(
            args.execution_id, include_execution_data=not args.no_data, reverse_order=args.reverse
        )
        if args.json:
            _print_json(events, out)
        else:
            out.write(format_timeline(events) + "\n")
    elif command == "callback":
        if args.via_bus:
            error = _error_from(args) if args.callback_command == "fail" else None
            result = args.result if args.callback_command == "success" else None
            event_id = client.publish_callback_event(args.callback_command, args.callback_id, result, error)
            out.write(f"callback {args.callback_id}: {args.callback_command} published as event {event_id}\n")
            return 0
        if args.callback_command == "success":
            client.send_callback_success(args.callback_id, args.result)
        elif args.callback_command == "fail":
            client.send_callback_failure(args.callback_id, _error_from(args))
        else:
            client.send_callback_heartbeat(args.callback_id)
        out.write(f"callback {args.callback_id}: {args.callback_command} sent\n")
    elif command == "stop":
        stopped = client.stop_execution(args.execution_id, _error_from(args))
        out.write(f"{args.execution_id}: {'stopped' if stopped else 'had already ended'}\n")
    elif command == "schedules":
        _schedules(args, client, out)
    elif command == "dlq":
        result = client.redrive_dlq(args.max_messages)
        if result.method == "move-task":
            out.write(f"redrive started (SQS message move task {result.task_handle})\n")
        else:
            out.write(f"moved {result.moved} messages from the DLQ to the work queue\n")
    return 0


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
            args.status, args.workflow, args.domain, args.subject_id, args.limit, token, tag
        )
        rows.extend(
            {
                "ExecutionId": record.execution_id,
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
    for row in rows:
        started, ended = row["StartTimestamp"], row["EndTimestamp"]
        out.write(f"{row['Status']:<10} {started:<19}  {ended:<19}  {row['ExecutionId']}\n")
    if token is not None:
        out.write(f"more: --next-token {token}\n")


def _upgrade(args: argparse.Namespace, client: StepwellClient, out: TextIO) -> None:
    if (args.execution_id is None) == (args.workflow is None):
        raise CliError("give an execution id or --workflow WORKFLOW --from-version V (one of them)")
    if args.execution_id is not None:
        if args.from_version is not None or args.dry_run:
            raise CliError("--from-version and --dry-run go with --workflow, not with an execution id")
        # Resolved once (an alias names a number), so the line says which version it runs on now.
        target = client.engine.resolve_version(args.to_version)
        upgraded = client.upgrade_execution(args.execution_id, target)
        verb = "upgraded to" if upgraded else "already on"
        out.write(f"{args.execution_id}: {verb} version {target}\n")
        return
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
    serve(client, out, args.host, args.port, args.open, args.allow_remote)


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
            f"next start {'now' if free else _stamp(rate['nextStartAt']) + ' UTC'}\n"
        )


def _add_schedule_commands(commands: Any) -> None:
    schedules = commands.add_parser("schedules", help="workflow schedules (EventBridge Scheduler)")
    actions = schedules.add_subparsers(dest="schedules_command", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="start a workflow on a cron, rate or at() expression")
    create.add_argument("name", help="schedule name (its executions are NAME-<fire time>)")
    create.add_argument("--workflow", required=True, help="registered workflow name")
    create.add_argument("--expression", required=True, help="at(...), rate(...) or cron(...)")
    create.add_argument("--timezone", default="UTC", help="IANA time zone (default: %(default)s)")
    create.add_argument("--input", metavar="JSON", help="the executions' input as JSON text (default: {})")
    create.add_argument(
        "--overlap",
        choices=["ALLOW", "SKIP"],
        default="ALLOW",
        help="SKIP: start nothing while one still runs (default: %(default)s)",
    )
    create.add_argument("--disabled", action="store_true", help="create it paused")
    listing = actions.add_parser("list", help="the schedules of the deployment's group")
    listing.add_argument("--all", action="store_true", help="the engine's own schedules too")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    for action, text in (("pause", "stop firing"), ("resume", "fire again"), ("delete", "delete")):
        pause_or_delete = actions.add_parser(action, help=f"{text} (a schedule of `schedules`: until apply)")
        pause_or_delete.add_argument("name")


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
        for each in listed:
            what = (
                "engine"
                if each["kind"] == "engine"
                else f"{each['workflow']} {each['overlap']} {each['timezone']}"
            )
            expression = each.get("expression") or "-"
            out.write(f"{each['name']:<40} {each['state'] or '-':<8} {expression:<24} {what}\n")
    elif action == "delete":
        client.delete_schedule(args.name)
        out.write(f"schedule {args.name}: deleted\n")
    else:
        changed = client.pause_schedule(args.name) if action == "pause" else client.resume_schedule(args.name)
        out.write(f"schedule {args.name}: {changed['state']}\n")


def callback_ids_as_positionals(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """Callback ids are URL-safe base64, so older ones may start with "-", which argparse takes for an
    option. After `callback ACTION`, the first word that is neither an option of ACTION nor an option's
    value is the id: if it starts with "-", it moves behind "--", where argparse reads it as the id."""
    words = list(argv)
    if "--" in words:
        return words
    at = _first_positional(parser, words, 0)
    if at is None or words[at] != "callback" or at + 1 >= len(words):
        return words
    action = _subcommand(_subcommand(parser, "callback"), words[at + 1])
    if action is None:
        return words
    index = _first_positional(action, words, at + 2, unknown_stops=True)
    if index is None or not words[index].startswith("-"):
        return words
    return [*words[:index], *words[index + 1 :], "--", words[index]]


def _first_positional(
    parser: argparse.ArgumentParser, words: Sequence[str], start: int, unknown_stops: bool = False
) -> int | None:
    """The index of the first word from `start` that is neither one of `parser`'s options nor an option's
    value (with `unknown_stops`, an unknown "-word" counts as that word too); None if there is none."""
    takes_value = {option: each.nargs != 0 for each in parser._actions for option in each.option_strings}
    index = start
    while index < len(words):
        word = words[index]
        option = word.split("=", 1)[0]
        if not word.startswith("-") or (unknown_stops and option not in takes_value):
            return index
        index += 2 if takes_value.get(option) and "=" not in word else 1
    return None


def _subcommand(parser: argparse.ArgumentParser | None, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions if parser is not None else ():
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser | None = action.choices.get(name)
            return found
    return None


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
                args, lambda: DefinitionsService.for_client(client()), stdout, sys.stdin, stderr
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
