"""CLI subcommands for definitions, contexts and events (wired into `stepwell` by stepwell.cli):

stepwell definitions put onboarding.json --domain acme
stepwell definitions get onboarding --domain acme [--version 2]
stepwell definitions list --domain acme
stepwell definitions versions onboarding --domain acme
stepwell definitions delete onboarding --domain acme
stepwell definitions validate onboarding.json            (no AWS needed)
stepwell definitions graph onboarding.json [--image g.svg]  or  graph --domain acme --id onboarding
stepwell contexts list --domain acme [--subject u1] [--workflow onboarding] [--all] [--json]
stepwell contexts show --domain acme onboarding u1 INSTANCE_ID [--json]
stepwell event send user.activated --domain acme --subject u1 [--data JSON] [--id ID] [--via-bus]
stepwell event rejected [--limit 20]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from stepwell.definitions.mermaid import render_image, to_mermaid
from stepwell.definitions.service import DefinitionsService
from stepwell.definitions.validation import parse_definition, validate_definition

COMMANDS = ("definitions", "contexts", "event")


class DefinitionsCliError(Exception):
    """A user error reported on one line."""


def add_commands(commands: Any) -> None:
    """Add the subcommands to the `stepwell` parser's subparsers object."""
    definitions = commands.add_parser("definitions", help="workflow definitions per domain")
    sub = definitions.add_subparsers(dest="definitions_command", required=True, metavar="ACTION")
    put = sub.add_parser("put", help="store a definition (a new version if its id exists)")
    put.add_argument("file", help="definition JSON file ('-' for stdin)")
    put.add_argument("--domain", required=True)
    put.add_argument(
        "--check-actions", action="store_true", help="also check action names are registered here"
    )
    get = sub.add_parser("get", help="print a definition")
    get.add_argument("workflow_id")
    get.add_argument("--domain", required=True)
    get.add_argument("--version", type=int)
    listing = sub.add_parser("list", help="list a domain's definitions")
    listing.add_argument("--domain", required=True)
    versions = sub.add_parser("versions", help="list a definition's versions")
    versions.add_argument("workflow_id")
    versions.add_argument("--domain", required=True)
    delete = sub.add_parser("delete", help="delete a definition (running contexts keep their version)")
    delete.add_argument("workflow_id")
    delete.add_argument("--domain", required=True)
    validate = sub.add_parser("validate", help="validate a definition file")
    validate.add_argument("file")
    graph = sub.add_parser("graph", help="render a definition as Mermaid (or an image with mmdc)")
    graph.add_argument("file", nargs="?", help="definition JSON file (else --domain and --id)")
    graph.add_argument("--domain")
    graph.add_argument("--id", dest="workflow_id")
    graph.add_argument("--image", metavar="OUT", help="write an image (.svg, .png, .pdf) with mmdc")

    contexts = commands.add_parser("contexts", help="contexts of definitions (one per subject and start)")
    csub = contexts.add_subparsers(dest="contexts_command", required=True, metavar="ACTION")
    clist = csub.add_parser("list", help="list contexts of a domain, a subject, or a definition and subject")
    clist.add_argument("--domain", required=True)
    clist.add_argument("--subject", dest="subject_id")
    clist.add_argument("--workflow", dest="workflow_id", help="definition id (needs --subject)")
    clist.add_argument("--limit", type=int, default=50)
    clist.add_argument("--next-token")
    clist.add_argument("--all", action="store_true", help="follow every page")
    clist.add_argument("--json", action="store_true")
    show = csub.add_parser("show", help="show a context and its timeline")
    show.add_argument("--domain", required=True)
    show.add_argument("workflow_id")
    show.add_argument("subject_id")
    show.add_argument("instance_id")
    show.add_argument("--json", action="store_true")

    event = commands.add_parser("event", help="domain events")
    esub = event.add_subparsers(dest="event_command", required=True, metavar="ACTION")
    send = esub.add_parser("send", help="send a domain event (processed now, or --via-bus)")
    send.add_argument("name", help="event name (the bus event's detail-type)")
    send.add_argument("--domain", required=True)
    send.add_argument("--subject", dest="subject_id", required=True)
    send.add_argument("--data", metavar="JSON", help="event data as JSON")
    send.add_argument("--id", dest="event_id", help="event id (a resend with the same id is a no-op)")
    send.add_argument("--via-bus", action="store_true", help="put it on the bus for the worker instead")
    rejected = esub.add_parser("rejected", help="recently rejected events and why")
    rejected.add_argument("--limit", type=int, default=20)


def _read_json(path: str, stdin: TextIO) -> Any:
    try:
        text = stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise DefinitionsCliError(f"cannot read {path!r}: {error}") from error
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DefinitionsCliError(f"{path!r} is not JSON: {error}") from error


def _dump(value: Any, out: TextIO) -> None:
    out.write(json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")


def run(
    args: argparse.Namespace, service: Callable[[], DefinitionsService], out: TextIO, stdin: TextIO
) -> bool:
    """Run a definitions/contexts/event command; False if `args.command` is not one of them.
    `service` is called only by commands that need the deployment."""
    if args.command == "definitions":
        _definitions(args, service, out, stdin)
    elif args.command == "contexts":
        _contexts(args, service(), out)
    elif args.command == "event":
        _event(args, service(), out)
    else:
        return False
    return True


def _definitions(
    args: argparse.Namespace, service: Callable[[], DefinitionsService], out: TextIO, stdin: TextIO
) -> None:
    command = args.definitions_command
    if command == "validate":
        errors = validate_definition(_read_json(args.file, stdin))
        if errors:
            raise DefinitionsCliError(f"{args.file}: " + "; ".join(errors))
        out.write(f"{args.file}: valid\n")
    elif command == "graph":
        if args.file:
            document = _read_json(args.file, stdin)
        elif args.domain and args.workflow_id:
            document = service().get_definition(args.domain, args.workflow_id).definition
        else:
            raise DefinitionsCliError("graph needs a FILE, or --domain and --id of a stored definition")
        text = to_mermaid(parse_definition(document))
        if args.image:
            out.write(f"wrote {render_image(text, Path(args.image))}\n")
        else:
            out.write(text)
    elif command == "put":
        stored = service().put_definition(args.domain, _read_json(args.file, stdin), args.check_actions)
        out.write(f"{stored.domain}/{stored.workflow_id}: version {stored.version}\n")
    elif command == "get":
        _dump(service().get_definition(args.domain, args.workflow_id, args.version).to_dict(), out)
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
    if not 1 <= args.limit <= 1000:
        raise DefinitionsCliError(f"--limit must be 1..1000, got {args.limit}")
    token = args.next_token
    rows: list[dict[str, Any]] = []
    while True:
        page = service.list_contexts(args.domain, args.subject_id, args.workflow_id, args.limit, token)
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
        for entry in service.rejected_events(args.limit):
            out.write(f"{entry['eventId']}: {entry['reason']}\n")
        return
    data = None
    if args.data is not None:
        try:
            data = json.loads(args.data)
        except json.JSONDecodeError as error:
            raise DefinitionsCliError(f"--data is not JSON: {error}") from error
    if args.via_bus:
        event_id = service.publish_event(args.domain, args.subject_id, args.name, data)
        out.write(f"published {args.name} for {args.domain}/{args.subject_id} as event {event_id}\n")
        return
    outcome = service.send_event(args.domain, args.subject_id, args.name, data, args.event_id)
    _dump(outcome.to_dict(), out)
