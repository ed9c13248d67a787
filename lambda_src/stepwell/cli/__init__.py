"""`stepwell`: the command line for a deployed Stepwell.

The deployment comes from `--config FILE` (the JSON of `terraform output -json client_config`), else the
file named by STEPWELL_CONFIG, else the STEPWELL_* environment variables the worker uses.

    stepwell --config client_config.json start orders --input '{"order": 7}' --name order-7
    stepwell describe 'default#orders#order-7/order-7'     (the id `start` printed)
    stepwell describe order-7 --workflow orders            (the same execution, by its name)
    stepwell list --status RUNNING
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
from stepwell.errors import ExecutionNotFound, StepwellError
from stepwell.features.definitions.service import DefinitionsService
from stepwell.model import KEY_PART_PATTERN, KEY_PART_RULE, ExecutionId, ExecutionStatus, make_execution_id
from stepwell.wiring.events import reject_json_constant

CONFIG_ENV = "STEPWELL_CONFIG"
USAGE_EXIT_STATUS = 2
DEFAULT_DOMAIN = "default"
EXECUTION_ID_FORMAT = "DOMAIN#WORKFLOW#SUBJECT/NAME, e.g. 'default#orders#order-7/order-7'"
EXECUTION_HELP = (
    f"the execution: its id ({EXECUTION_ID_FORMAT}, as `stepwell start` prints it), or its NAME with "
    "--workflow"
)
EXECUTION_DESCRIPTION = (
    f"EXECUTION is an execution id, {EXECUTION_ID_FORMAT}: the domain, the workflow, the subject and the "
    "name it was started with (`stepwell start` prints it; `stepwell list` shows it), or the execution's "
    "NAME with --workflow (and --domain and --subject if its start gave them)."
)
CALLBACK_ID_HELP = (
    "the callback id: the URL-safe text the workflow's callback was given, shown on its CallbackStarted "
    "event by `stepwell history` (one starting with '-' works too)"
)
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
        "executions",
        help="the execution commands (start, describe, list, history, stop), and upgrade",
        description="The execution commands, also reachable at the top level, and `upgrade`, which moves "
        "running executions to another code version.",
    )
    execution_commands = executions.add_subparsers(dest="executions_command", required=True, metavar="ACTION")
    _add_execution_commands(execution_commands)
    upgrade = execution_commands.add_parser(
        "upgrade",
        help="move running executions to another code version (recorded in their history)",
        description="Move one running execution (EXECUTION) or every running execution of a workflow on "
        "one version (--workflow with --from-version) to another code version: it replays on that code now, "
        f"and its history records ExecutionUpgraded. {EXECUTION_DESCRIPTION}",
    )
    _add_execution_address(
        upgrade,
        optional=True,
        workflow_help="with a NAME: the workflow it runs; without EXECUTION: move every running execution "
        "of this workflow that runs on --from-version",
    )
    upgrade.add_argument(
        "--from-version",
        metavar="V",
        help="with --workflow alone: the version number (or alias) its executions run on now",
    )
    upgrade.add_argument(
        "--to-version",
        metavar="V",
        required=True,
        help="the version to move to: a number, or an alias ('live': the one new executions start on)",
    )
    upgrade.add_argument(
        "--dry-run", action="store_true", help="with --workflow alone: list the executions, move nothing"
    )

    versions = commands.add_parser(
        "versions",
        help="the worker's code versions and the running executions pinned to each",
        description="List the worker function's published versions, oldest first: the aliases pointing "
        "at each, how many running executions are pinned to it, and when it was published.",
    )
    versions.add_argument("--json", action="store_true", help="print JSON instead of a table")

    callback = commands.add_parser(
        "callback",
        help="complete, fail or extend a callback",
        description="Answer a callback a workflow waits for (wait_for_callback, create_callback): "
        "complete it with a result, fail it with an error, or send a heartbeat. The callback id is the one "
        "the workflow's callback was given (`stepwell history EXECUTION` shows it on CallbackStarted).",
    )
    callback_commands = callback.add_subparsers(dest="callback_command", required=True, metavar="ACTION")
    success = callback_commands.add_parser(
        "success",
        aliases=["succeed"],
        help="complete the callback with a result",
        description="Complete the callback with a result. The workflow receives it as text, as on AWS "
        "(SendDurableExecutionCallbackSuccess): the SDK hands it over unparsed unless the callback's config "
        "has a serdes, e.g. JSON. --result must be JSON unless --raw is given.",
    )
    success.add_argument("callback_id", metavar="CALLBACK_ID", help=CALLBACK_ID_HELP)
    success.add_argument(
        "--result",
        metavar="JSON",
        help="the result as JSON text, e.g. '{\"approved\": true}' or '\"yes\"' for a string (default: none)",
    )
    success.add_argument(
        "--raw",
        action="store_true",
        help="send --result as it is, without checking that it is JSON (for a callback whose serdes reads "
        "another format)",
    )
    success.set_defaults(callback_action="success")
    fail = callback_commands.add_parser(
        "fail",
        help="fail the callback",
        description="Fail the callback: the workflow's wait raises the SDK's CallbackError carrying the "
        "error given here.",
    )
    fail.add_argument("callback_id", metavar="CALLBACK_ID", help=CALLBACK_ID_HELP)
    _add_error_arguments(fail)
    fail.set_defaults(callback_action="fail")
    heartbeat = callback_commands.add_parser(
        "heartbeat",
        help="send a heartbeat for the callback",
        description="Tell the callback its sender is still working: its heartbeat timeout starts again.",
    )
    heartbeat.add_argument("callback_id", metavar="CALLBACK_ID", help=CALLBACK_ID_HELP)
    heartbeat.set_defaults(callback_action="heartbeat")
    for action in (success, fail, heartbeat):
        action.add_argument(
            "--via-bus",
            action="store_true",
            help="send it as an event on the deployment's event bus, which the worker applies, instead of "
            "writing it to the tables from here",
        )

    dlq = commands.add_parser(
        "dlq",
        help="dead-letter queue",
        description="The work queue's dead-letter queue: messages the worker failed on too many times.",
    )
    dlq_commands = dlq.add_subparsers(dest="dlq_command", required=True, metavar="ACTION")
    redrive = dlq_commands.add_parser(
        "redrive",
        help="move the DLQ's messages back to the work queue",
        description="Move the dead-letter queue's messages back to the work queue, where the worker "
        "takes them again (an SQS message move task, or moved here with --max).",
    )
    redrive.add_argument(
        "--max",
        dest="max_messages",
        type=int,
        help="move at most this many messages, one by one from here (default: all, by a move task)",
    )
    console = commands.add_parser(
        "console",
        help="serve the web console here (the 'console' extra)",
        description="Serve the web console. Every request needs its token: open the URL it prints "
        "(.../?token=...). The token is random, or STEPWELL_CONSOLE_TOKEN's value (16+ URL-safe characters).",
    )
    console.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: %(default)s, this machine only)",
    )
    console.add_argument(
        "--port",
        type=_port,
        default=8080,
        help="the port to listen on (default: %(default)s; 0: any free one)",
    )
    console.add_argument("--open", action="store_true", help="open it in the default web browser")
    console.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host that other machines reach (anyone with the URL acts as you)",
    )
    flow = commands.add_parser(
        "flow",
        help="a workflow's flow control for one key: its limits, running and waiting executions",
        description="Show one key of a flow-controlled workflow: its concurrency limit with the executions "
        "running and waiting, and its rate limit with the recent starts and when the next may start.",
    )
    flow.add_argument("workflow", help="the workflow's registered name, or a definition's id")
    flow.add_argument(
        "--key", default="", help="the key's value, e.g. a customer id (default: none, the whole workflow)"
    )
    flow.add_argument("--domain", default=DEFAULT_DOMAIN, help="the domain (default: %(default)s)")
    flow.add_argument("--json", action="store_true", help="print JSON instead of text")
    _add_schedule_commands(commands)
    definitions_cli.add_commands(commands)
    local_cli.add_commands(commands)
    _describe_every_command(parser)
    return parser


def _describe_every_command(parser: argparse.ArgumentParser) -> None:
    """Every subcommand's --help opens with a description: its own, else its one-line help."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, sub in action.choices.items():
            if sub.description is None and helps.get(name):
                text = str(helps[name])
                sub.description = text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")
            _describe_every_command(sub)


def _add_execution_commands(commands: Any) -> None:
    """start, describe, list, history, stop: at the top level and under `executions`."""
    start = commands.add_parser(
        "start",
        help="start an execution of a registered workflow",
        description="Start an execution of a workflow and print its id, "
        f"{EXECUTION_ID_FORMAT}. Starting it again under the same --name returns the same execution. A "
        "deployment whose config lists its workflows refuses any other name, listing them.",
    )
    start.add_argument("workflow", help="the workflow's registered name")
    source = start.add_mutually_exclusive_group()
    source.add_argument("--input", metavar="JSON", help="the input as JSON text (default: null)")
    source.add_argument("--input-file", metavar="FILE", help="read the JSON input from FILE ('-' for stdin)")
    start.add_argument(
        "--name",
        dest="execution_name",
        help="the execution's name, unique within the workflow and subject: starting it again is a no-op "
        "(default: a random one)",
    )
    start.add_argument(
        "--domain", default=DEFAULT_DOMAIN, help="the domain it runs in (default: %(default)s)"
    )
    start.add_argument(
        "--subject",
        dest="subject_id",
        metavar="SUBJECT",
        help="what the execution is about, e.g. a customer id, to list it by (default: the execution name)",
    )
    start.add_argument(
        "--tag",
        dest="tags",
        action="append",
        metavar="KEY=VALUE",
        help="tag the execution (repeatable, at most 10; split at the first '=')",
    )

    describe = commands.add_parser(
        "describe",
        help="show an execution as JSON",
        description="Show an execution as JSON: its status, input, result or error, version and tags, with "
        f"its timestamps in ISO 8601 (UTC). {EXECUTION_DESCRIPTION}",
    )
    _add_execution_address(describe)

    listing = commands.add_parser(
        "list",
        help="list executions by status, workflow, domain and subject, or tag (see --tag)",
        description="List executions, newest first, as a table (status, start and end times in UTC, "
        "workflow, name and id) or as JSON: by --status, by --workflow, by --domain (optionally with "
        "--subject), or by --tag within --domain (optionally of one --status).",
    )
    # One of status, workflow or domain; --tag combines with --domain and --status (_check_list_filter).
    listing.add_argument(
        "--status", choices=[status.value for status in ExecutionStatus], help="executions in this status"
    )
    listing.add_argument("--workflow", help="executions of this workflow")
    listing.add_argument("--domain", help="executions in this domain (optionally with --subject)")
    listing.add_argument(
        "--tag",
        metavar="KEY=VALUE",
        help="executions with this tag in --domain (default: default), newest first; --status filters",
    )
    listing.add_argument(
        "--subject", dest="subject_id", metavar="SUBJECT", help="with --domain: executions about this subject"
    )
    listing.add_argument(
        "--limit", type=int, default=50, help="how many executions a page holds (default: %(default)s)"
    )
    listing.add_argument(
        "--next-token", metavar="TOKEN", help="continue where a previous page ended (it prints the token)"
    )
    listing.add_argument("--all", action="store_true", help="follow every page")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")

    history = commands.add_parser(
        "history",
        help="show an execution's events as a timeline",
        description="Show an execution's events, oldest first, as a timeline (seconds since its start) or "
        f"as JSON (GetDurableExecutionHistory's events). {EXECUTION_DESCRIPTION}",
    )
    _add_execution_address(history)
    history.add_argument("--json", action="store_true", help="print the events as JSON")
    history.add_argument(
        "--no-data", action="store_true", help="leave out inputs, results and errors (marked Truncated)"
    )
    history.add_argument("--reverse", action="store_true", help="newest event first")

    stop = commands.add_parser(
        "stop",
        help="stop a running execution",
        description="Stop a running execution: it ends STOPPED, with the error given here. "
        f"{EXECUTION_DESCRIPTION}",
    )
    _add_execution_address(stop)
    _add_error_arguments(stop)


def _add_execution_address(
    parser: argparse.ArgumentParser,
    optional: bool = False,
    workflow_help: str = "with a NAME: the workflow it runs",
) -> None:
    """EXECUTION, an id or a name, and the options that complete a name (_execution_id)."""
    parser.add_argument(
        "execution", metavar="EXECUTION", nargs="?" if optional else None, help=EXECUTION_HELP
    )
    parser.add_argument("--workflow", help=workflow_help)
    parser.add_argument(
        "--domain", help=f"with a NAME: the domain its start gave (default: {DEFAULT_DOMAIN})"
    )
    parser.add_argument(
        "--subject",
        dest="subject_id",
        metavar="SUBJECT",
        help="with a NAME: the subject its start gave (default: the name)",
    )


def _add_error_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--error-type", metavar="TYPE", help="what kind of error, a short name such as Rejected (ErrorType)"
    )
    parser.add_argument("--error-message", metavar="TEXT", help="what went wrong, in words (ErrorMessage)")
    parser.add_argument(
        "--error-data", metavar="TEXT", help="more about it for the workflow to read, e.g. JSON (ErrorData)"
    )


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
            args.workflow, _read_input(args, stdin), args.execution_name, args.domain, args.subject_id, tags
        )
        out.write(execution_id + "\n")
    elif command in ("describe", "history", "stop"):
        execution_id = _execution_id(args)
        try:
            _execution_command(command, args, client, execution_id, out)
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
    command: str, args: argparse.Namespace, client: StepwellClient, execution_id: str, out: TextIO
) -> None:
    if command == "describe":
        description = client.describe_execution(execution_id)
        for key in ("StartTimestamp", "EndTimestamp"):
            if isinstance(description.get(key), int | float):
                description[key] = _stamp(description[key], "milliseconds")
        _print_json(description, out)
    elif command == "history":
        events = client.get_execution_history(
            execution_id, include_execution_data=not args.no_data, reverse_order=args.reverse
        )
        if args.json:
            _print_json(events, out)
        else:
            out.write(format_timeline(events) + "\n")
    else:
        stopped = client.stop_execution(execution_id, _error_from(args))
        out.write(f"{execution_id}: {'stopped' if stopped else 'had already ended'}\n")


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
            args.status, args.workflow, args.domain, args.subject_id, args.limit, token, tag
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
            f"next start {'now' if free else _stamp(rate['nextStartAt'])}\n"
        )


def _add_schedule_commands(commands: Any) -> None:
    schedules = commands.add_parser(
        "schedules",
        help="workflow schedules (EventBridge Scheduler)",
        description="Start workflows on a schedule: EventBridge Scheduler schedules in the deployment's "
        "group, each starting an execution named after the schedule and its fire time.",
    )
    actions = schedules.add_subparsers(dest="schedules_command", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="start a workflow on a cron, rate or at() expression")
    create.add_argument("name", help="the schedule's name (its executions are NAME-<fire time>)")
    create.add_argument(
        "--workflow",
        required=True,
        help="the workflow's registered name (refused if the deployment lists its workflows without it)",
    )
    create.add_argument(
        "--expression",
        required=True,
        help="when it fires: at(2026-01-02T03:04:05), rate(1 hour) or cron(0 2 * * ? *)",
    )
    create.add_argument(
        "--timezone", default="UTC", help="the IANA time zone of the expression (default: %(default)s)"
    )
    create.add_argument("--input", metavar="JSON", help="the executions' input as JSON text (default: {})")
    create.add_argument(
        "--overlap",
        choices=["ALLOW", "SKIP"],
        default="ALLOW",
        help="SKIP: start nothing while the schedule's previous execution still runs; ALLOW: start anyway "
        "(default: %(default)s)",
    )
    create.add_argument("--disabled", action="store_true", help="create it paused")
    listing = actions.add_parser("list", help="the schedules of the deployment's group")
    listing.add_argument(
        "--all", action="store_true", help="also the engine's own schedules (one-time wake-ups of executions)"
    )
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    for action, text in (("pause", "stop firing"), ("resume", "fire again"), ("delete", "delete")):
        pause_or_delete = actions.add_parser(action, help=f"{text} (a schedule of `schedules`: until apply)")
        pause_or_delete.add_argument("name", help="the schedule's name, as `schedules list` shows it")


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
