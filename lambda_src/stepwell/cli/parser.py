"""The `stepwell` command line's parser: its commands, their options and what each --help says.

Also the one rewrite argparse needs: a callback id starting with "-" is moved behind "--"
(callback_ids_as_positionals). stepwell.cli runs what the parser reads.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from stepwell.cli import definitions as definitions_cli
from stepwell.cli import local as local_cli
from stepwell.core.tracing import parse_trace_header
from stepwell.errors import InvalidArgument
from stepwell.model import ExecutionStatus

CONFIG_ENV = "STEPWELL_CONFIG"


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


MAX_PORT = 65535


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


def _trace_header(text: str) -> str:
    """--trace-header: an X-Ray tracing header, checked as the engine checks a start's."""
    try:
        parse_trace_header(text)
    except InvalidArgument as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


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
        help="the execution commands (start, describe, list, history, stop, pause, resume, delete), "
        "and upgrade",
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
    """start, describe, list, history, stop, pause, resume, delete: at the top level and under
    `executions`."""
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
    start.add_argument(
        "--trace-header",
        type=_trace_header,
        metavar="HEADER",
        help="the X-Ray tracing header whose trace the execution joins, "
        "Root=1-<8 hex>-<24 hex>[;Parent=<16 hex>][;Sampled=0|1] (default: a fresh trace)",
    )

    describe = commands.add_parser(
        "describe",
        help="show an execution as JSON",
        description="Show an execution as JSON: its status, input, result or error, version and tags, its "
        "ARN (executionArn: as AWS's durable execution API answers it and its log records name it), with "
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
    history.add_argument(
        "--all",
        action="store_true",
        help="also show the steps the SDK runs inside wait_for_callback (its submitter; without --all a "
        "callback's events are shown as its wait_for_callback's); --json always has every event",
    )

    stop = commands.add_parser(
        "stop",
        help="stop a running execution",
        description="Stop a running execution: it ends STOPPED, with the error given here. "
        f"{EXECUTION_DESCRIPTION}",
    )
    _add_execution_address(stop)
    _add_error_arguments(stop)

    pause = commands.add_parser(
        "pause",
        help="pause a running execution: nothing runs until it is resumed",
        description="Pause a running execution, as AWS's PauseDurableExecution: it is PAUSING until a run in "
        "flight reaches its next checkpoint, then PAUSED. Nothing of its code runs until `stepwell resume`; "
        "its waits and callbacks still complete meanwhile, and their results wait for the resume. Its "
        "execution timeout is paused too (it still times out 366 days after its start) unless "
        f"--timeout-keeps-running. Pausing it again changes nothing. {EXECUTION_DESCRIPTION}",
    )
    _add_execution_address(pause)
    pause.add_argument(
        "--reason", metavar="TEXT", help="why it is paused (up to 1024 characters; its history records it)"
    )
    pause.add_argument(
        "--timeout-keeps-running",
        action="store_true",
        help="let its execution timeout run on while paused: it times out at its usual time, paused or not "
        "(AWS's ExecutionTimeoutPaused false)",
    )

    resume = commands.add_parser(
        "resume",
        help="resume a paused execution",
        description="Resume a paused execution, as AWS's ResumeDurableExecution: it runs again at once when "
        "work is due (an interrupted run, a wait that ended or a callback that came while it was paused), "
        f"else it goes on waiting. A PAUSING one's pause is cancelled. {EXECUTION_DESCRIPTION}",
    )
    _add_execution_address(resume)
    resume.add_argument(
        "--reason", metavar="TEXT", help="why it is resumed (up to 1024 characters; its history records it)"
    )

    delete = commands.add_parser(
        "delete",
        help="delete an ended execution with its history and payloads",
        description="Delete an ended execution (SUCCEEDED, FAILED, STOPPED or TIMED_OUT), as AWS's "
        "DeleteDurableExecution: its history, input, result and every other item and payload of it. It is "
        "DELETING until the worker has removed them, then gone for good. A running or paused one is refused: "
        f"stop it first. Executions its invokes started stay. {EXECUTION_DESCRIPTION}",
    )
    _add_execution_address(delete)


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
