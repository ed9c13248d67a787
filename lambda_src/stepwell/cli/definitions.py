"""CLI subcommands for definitions, contexts and events (wired into `stepwell` by stepwell.cli).

A stored definition is named the same way everywhere: its id as the argument, its domain as `--domain`,
and (where a version makes sense) `--version N`:

stepwell definitions put onboarding.json --domain acme
stepwell definitions get onboarding --domain acme [--version 2]
stepwell definitions list --domain acme
stepwell definitions versions onboarding --domain acme
stepwell definitions delete onboarding --domain acme
stepwell definitions validate onboarding.json            (no AWS needed)
stepwell definitions graph onboarding.json [--image g.svg]  or  graph onboarding --domain acme [--version 2]
stepwell contexts list --domain acme [--subject u1] [--workflow onboarding] [--all] [--json]
stepwell contexts show --domain acme onboarding u1 INSTANCE_ID [--json]
stepwell event send user.activated --domain acme --subject u1 [--data JSON] [--id ID] [--via-bus [--source S]]
stepwell event rejected [--limit 20]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from stepwell.features.definitions.actions import default_actions
from stepwell.features.definitions.mermaid import render_image, to_mermaid
from stepwell.features.definitions.model import DefinitionNotFound
from stepwell.features.definitions.service import DefinitionsService
from stepwell.features.definitions.store import StoredWorkflow
from stepwell.features.definitions.validation import (
    parse_definition,
    unregistered_actions,
    validate_definition,
)
from stepwell.wiring.events import reject_json_constant

COMMANDS = ("definitions", "contexts", "event")


# EventBridge's limit on an event's detail-type, which carries the event name on the bus.
MAX_EVENT_NAME_LENGTH = 128
MAX_LIMIT = 1000  # items per page a listing command asks for


class DefinitionsCliError(Exception):
    """A user error reported on one line."""


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise DefinitionsCliError(f"--limit must be 1..{MAX_LIMIT}, got {limit}")
    return limit


def load_json_text(text: str, origin: str) -> Any:
    """Parse JSON given on the command line or in a file; NaN and Infinity (which Python's json accepts)
    are refused, as every JSON consumer downstream would refuse them."""
    try:
        return json.loads(text, parse_constant=reject_json_constant)
    except ValueError as error:  # json.JSONDecodeError is a ValueError too
        raise DefinitionsCliError(f"{origin} is not valid JSON ({error}): {text[:100]!r}") from error
    except RecursionError:
        raise DefinitionsCliError(f"{origin} is JSON nested too deeply: {text[:100]!r}") from None


def add_commands(commands: Any) -> None:
    """Add the subcommands to the `stepwell` parser's subparsers object."""
    definitions = commands.add_parser("definitions", help="workflow definitions per domain")
    sub = definitions.add_subparsers(dest="definitions_command", required=True, metavar="ACTION")
    put = sub.add_parser("put", help="store a definition (a new version if its id exists)")
    put.add_argument("file", help="definition JSON file ('-' for stdin)")
    put.add_argument("--domain", required=True, help="the tenant domain the definitions belong to")
    put.add_argument(
        "--check-actions", action="store_true", help="also check action names are registered here"
    )
    get = sub.add_parser("get", help="print a definition")
    get.add_argument("workflow_id", help="the definition's id (its `id` field)")
    get.add_argument("--domain", required=True, help="the tenant domain the definitions belong to")
    get.add_argument("--version", type=int, help="a stored version (default: the latest)")
    listing = sub.add_parser("list", help="list a domain's definitions")
    listing.add_argument("--domain", required=True, help="the tenant domain the definitions belong to")
    versions = sub.add_parser("versions", help="list a definition's versions")
    versions.add_argument("workflow_id", help="the definition's id (its `id` field)")
    versions.add_argument("--domain", required=True, help="the tenant domain the definitions belong to")
    delete = sub.add_parser("delete", help="delete a definition (running contexts keep their version)")
    delete.add_argument("workflow_id", help="the definition's id (its `id` field)")
    delete.add_argument("--domain", required=True, help="the tenant domain the definitions belong to")
    validate = sub.add_parser("validate", help="validate a definition file")
    validate.add_argument("file", help="definition JSON file ('-' for stdin)")
    graph = sub.add_parser("graph", help="render a definition as Mermaid (or an image with mmdc)")
    graph.add_argument(
        "file",
        nargs="?",
        metavar="FILE|WORKFLOW_ID",
        help="a definition file, or with --domain a stored id",
    )
    graph.add_argument("--domain", help="render the stored definition WORKFLOW_ID of this domain")
    graph.add_argument("--version", type=int, help="a stored version (default: the latest)")
    graph.add_argument("--id", dest="workflow_id", help=argparse.SUPPRESS)  # the older spelling
    graph.add_argument("--image", metavar="OUT", help="write an image (.svg, .png, .pdf) with mmdc")

    contexts = commands.add_parser("contexts", help="contexts of definitions (one per subject and start)")
    csub = contexts.add_subparsers(dest="contexts_command", required=True, metavar="ACTION")
    clist = csub.add_parser("list", help="list contexts of a domain, a subject, or a definition and subject")
    clist.add_argument("--domain", required=True, help="the tenant domain of the contexts")
    clist.add_argument("--subject", dest="subject_id", help="only the contexts of this subject id")
    clist.add_argument("--workflow", dest="workflow_id", help="definition id (needs --subject)")
    clist.add_argument("--limit", type=int, default=50, help="contexts per page (default 50)")
    clist.add_argument("--next-token", help="the page token a previous listing printed")
    clist.add_argument("--all", action="store_true", help="follow every page")
    clist.add_argument("--json", action="store_true", help="print JSON instead of a table")
    show = csub.add_parser("show", help="show a context and its timeline")
    show.add_argument("--domain", required=True, help="the tenant domain of the context")
    show.add_argument("workflow_id", help="the definition's id (its `id` field)")
    show.add_argument("subject_id", help="the subject the context runs for")
    show.add_argument("instance_id", help="the context's instance (the listing's INSTANCE column)")
    show.add_argument("--json", action="store_true", help="print JSON instead of text")

    event = commands.add_parser("event", help="domain events")
    esub = event.add_subparsers(dest="event_command", required=True, metavar="ACTION")
    send = esub.add_parser("send", help="send a domain event (processed now, or --via-bus)")
    send.add_argument("name", help="event name (the bus event's detail-type)")
    send.add_argument("--domain", required=True, help="the tenant domain the event is for")
    send.add_argument("--subject", dest="subject_id", required=True, help="the subject id the event is about")
    send.add_argument("--data", metavar="JSON", help="event data as JSON")
    send.add_argument("--id", dest="event_id", help="event id (a resend with the same id is a no-op)")
    send.add_argument("--via-bus", action="store_true", help="put it on the bus for the worker instead")
    send.add_argument(
        "--source",
        default="stepwell.client",
        help="with --via-bus: the event's source; the module's event_sources must let it speak for --domain",
    )
    rejected = esub.add_parser("rejected", help="recently rejected events and why")
    rejected.add_argument("--limit", type=int, default=20, help="how many to show, newest first (default 20)")


def _read_json(path: str, stdin: TextIO) -> Any:
    try:
        text = stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DefinitionsCliError(f"cannot read {path!r}: {error}") from error
    return load_json_text(text, repr(path))


def _stored(
    service: DefinitionsService, domain: str, workflow_id: str, version: int | None
) -> StoredWorkflow:
    """The stored definition, or a one-line error saying what does exist."""
    try:
        return service.get_definition(domain, workflow_id, version)
    except DefinitionNotFound as error:
        versions = service.list_versions(domain, workflow_id)
        if versions:
            listed = ", ".join(str(stored.version) for stored in versions)
            raise DefinitionsCliError(f"{error}; its versions are {listed}") from error
        ids = sorted(stored.workflow_id for stored in service.list_definitions(domain))
        existing = ", ".join(ids) if ids else "none"
        raise DefinitionsCliError(f"{error}; definitions in domain {domain!r}: {existing}") from error


def _dump(value: Any, out: TextIO) -> None:
    out.write(json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")


def run(
    args: argparse.Namespace,
    service: Callable[[], DefinitionsService],
    out: TextIO,
    stdin: TextIO,
    *,
    err: TextIO | None = None,
) -> bool:
    """Run a definitions/contexts/event command; False if `args.command` is not one of them.
    `service` is called only by commands that need the deployment; warnings go to `err` (stderr)."""
    if args.command == "definitions":
        _definitions(args, service, out, stdin, err=err or sys.stderr)
    elif args.command == "contexts":
        _contexts(args, service(), out)
    elif args.command == "event":
        _event(args, service(), out)
    else:
        return False
    return True


def _warn(warnings: list[str], err: TextIO) -> None:
    for warning in warnings:
        err.write(f"stepwell: warning: {warning}\n")


def _definitions(
    args: argparse.Namespace,
    service: Callable[[], DefinitionsService],
    out: TextIO,
    stdin: TextIO,
    *,
    err: TextIO,
) -> None:
    command = args.definitions_command
    if command == "validate":
        document = _read_json(args.file, stdin)
        errors = validate_definition(document)
        if errors:
            raise DefinitionsCliError(f"{args.file}: " + "; ".join(errors))
        # Only the built-in actions are known here: the deployed workflow code may register the others.
        _warn(unregistered_actions(document, default_actions.names()), err)
        out.write(f"{args.file}: valid\n")
    elif command == "graph":
        if args.file and args.workflow_id:
            raise DefinitionsCliError(f"graph takes FILE|WORKFLOW_ID or --id, not both ({args.file!r})")
        stored_id = args.workflow_id or (args.file if args.domain else None)
        if stored_id is not None and args.domain:
            document = _stored(service(), args.domain, stored_id, args.version).definition
        elif args.file and args.version is None:
            document = _read_json(args.file, stdin)
        else:
            raise DefinitionsCliError(
                "graph needs a definition FILE, or WORKFLOW_ID --domain DOMAIN [--version N] of a stored one"
            )
        text = to_mermaid(parse_definition(document))
        if args.image:
            out.write(f"wrote {render_image(text, Path(args.image))}\n")
        else:
            out.write(text)
    elif command == "put":
        document = _read_json(args.file, stdin)
        definitions = service()
        stored = definitions.put_definition(args.domain, document, args.check_actions)
        if not args.check_actions:
            _warn(definitions.action_warnings(document), err)
        out.write(f"{stored.domain}/{stored.workflow_id}: version {stored.version}\n")
    elif command == "get":
        _dump(_stored(service(), args.domain, args.workflow_id, args.version).to_dict(), out)
    elif command == "list":
        for stored in service().list_definitions(args.domain):
            out.write(f"{stored.workflow_id:<32} v{stored.version:<4} updated {stored.updated_at}\n")
    elif command == "versions":
        for stored in service().list_versions(args.domain, args.workflow_id):
            out.write(f"v{stored.version:<4} {stored.updated_at}\n")
    elif command == "delete":
        existed = service().delete_definition(args.domain, args.workflow_id)
        out.write(f"{args.domain}/{args.workflow_id}: {'deleted' if existed else 'did not exist'}\n")


def _contexts(args: argparse.Namespace, service: DefinitionsService, out: TextIO) -> None:
    if args.contexts_command == "show":
        shown = service.show_context(args.domain, args.workflow_id, args.subject_id, args.instance_id)
        if args.json:
            _dump(shown, out)
            return
        context = shown["context"]
        out.write(
            f"{context['contextKey']}/{context['instanceId']}  {context['status']}  "
            f"version {context['version']}\n"
            f"execution: {context['executionId']}\n"
            f"waiting: {', '.join(w['event'] for w in context['waiting'].values()) or 'nothing'}\n"
            f"data: {json.dumps(context['data'], sort_keys=True)}\n"
        )
        if shown.get("timeline"):
            out.write(shown["timeline"] + "\n")
        return
    check_limit(args.limit)
    token = args.next_token
    rows: list[dict[str, Any]] = []
    while True:
        page = service.list_contexts(
            args.domain, args.subject_id, args.workflow_id, limit=args.limit, next_token=token
        )
        rows.extend(record.to_dict() for record in page.items)
        token = page.next_token
        if not args.all or token is None:
            break
    if args.json:
        _dump({"Contexts": rows, "NextToken": token}, out)
        return
    for row in rows:
        waiting = ",".join(w["event"] for w in row["waiting"].values())
        out.write(
            f"{row['status']:<10} {row['workflowId']:<24} {row['subjectId']:<24} {row['instanceId']}"
            + (f"  waits for {waiting}" if waiting else "")
            + "\n"
        )
    if token is not None:
        out.write(f"more: --next-token {token}\n")


def _event(args: argparse.Namespace, service: DefinitionsService, out: TextIO) -> None:
    if args.event_command == "rejected":
        for entry in service.rejected_events(check_limit(args.limit)):
            out.write(f"{entry['eventId']}: {entry['reason']}\n")
        return
    name = args.name
    if not name.strip() or len(name) > MAX_EVENT_NAME_LENGTH:
        raise DefinitionsCliError(
            f"invalid event name {name!r}: 1 to {MAX_EVENT_NAME_LENGTH} characters, not only blanks"
        )
    data = None if args.data is None else load_json_text(args.data, "--data")
    if args.via_bus:
        event_id = service.publish_event(args.domain, args.subject_id, args.name, data, source=args.source)
        out.write(f"published {args.name} for {args.domain}/{args.subject_id} as event {event_id}\n")
        return
    outcome = service.send_event(args.domain, args.subject_id, args.name, data, event_id=args.event_id)
    _dump(outcome.to_dict(), out)
    if outcome.status == "rejected":
        raise DefinitionsCliError(
            f"event {args.name!r} for {args.domain}/{args.subject_id} was rejected: {outcome.reason}"
        )
