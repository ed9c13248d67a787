"""The console's Flask app: server-rendered pages and the small JSON API their script polls.

Everything runs on the operator's machine with their own AWS credentials through a StepwellClient (see
docs/console.md for the access policies it needs). Every page is Jinja-autoescaped; the SVG pictures
escape their own text (stepwell.console.timeline, stepwell.console.graph). A request that changes
something is a POST carrying the per-process token the pages embed (CSRF), so another site open in the
same browser cannot make the console stop, pause, resume or delete an execution. Every request needs the
console's access token (in the start URL's ?token=, then an HttpOnly cookie), so another user of the
machine cannot use it.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from botocore.exceptions import BotoCoreError, ClientError
from flask import Flask, Response, abort, flash, g, jsonify, redirect, render_template, request, url_for
from markupsafe import Markup
from werkzeug.wrappers import Response as BaseResponse

from stepwell.aws.work_queue import QueueError
from stepwell.client import StepwellClient
from stepwell.config import ConfigError
from stepwell.console import graph, timeline
from stepwell.core.sdk_operations import internal_operations
from stepwell.core.tracing import trace_id_of
from stepwell.errors import ExecutionNotFound, InvalidArgument, StepwellError
from stepwell.features.definitions.service import DefinitionsService
from stepwell.features.definitions.validation import parse_definition
from stepwell.model import ExecutionRecord, ExecutionStatus

CSRF_FIELD = "csrf_token"
PAGE_SIZE = 25
MAX_PAGE_SIZE = 100
# Errors whose message is meant for the operator: shown on the page, not as a server error.
USER_ERRORS = (StepwellError, ConfigError, QueueError, ValueError, LookupError, ClientError, BotoCoreError)
# The names a browser on this machine uses for it: a request naming another host is refused, so a web page
# whose domain is re-pointed at 127.0.0.1 (DNS rebinding) cannot read the console or its token.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
# The access token: in the start URL's query once, then in an HttpOnly cookie the pages' links and forms
# carry by themselves.
TOKEN_PARAMETER = "token"
TOKEN_COOKIE_PREFIX = "stepwell_console_"
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9._~-]{16,256}")
_PORT = re.compile(r"[0-9]{1,5}")


def new_access_token() -> str:
    return secrets.token_urlsafe(32)


def check_access_token(token: str) -> str:
    """A token the operator chose (STEPWELL_CONSOLE_TOKEN): too long to guess, and URL-safe."""
    if TOKEN_PATTERN.fullmatch(token) is None:
        odd = sorted({char for char in token if not re.fullmatch(r"[A-Za-z0-9._~-]", char)})
        detail = f"it holds {''.join(odd)!r}" if odd else f"it has {len(token)} characters"
        raise ValueError(
            f"the console token must be 16 to 256 characters of A-Z a-z 0-9 . _ ~ - ({detail}); "
            "leave STEPWELL_CONSOLE_TOKEN unset for a random one"
        )
    return token


def token_cookie_name(port: str) -> str:
    """The cookie per port: a browser sends a host's cookies to all its ports, so two consoles on one
    machine each keep their own."""
    return f"{TOKEN_COOKIE_PREFIX}{port}"


def _host_name(host: str) -> str | None:
    """The name in a Host header (`name`, `name:port`, `[v6]`, `[v6]:port`), lowercased, IP addresses in
    their canonical form; None for a header that is none of these."""
    host = host.strip().lower()
    if host.startswith("["):
        name, bracket, port = host[1:].partition("]")
        if not bracket or (port and not (port[0] == ":" and _PORT.fullmatch(port[1:]))):
            return None
    else:
        name, colon, port = host.partition(":")
        if colon and not _PORT.fullmatch(port):
            return None
    if not name:
        return None
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name if ":" not in name else None


def host_allowed(host: str, trusted_hosts: Sequence[str] | None) -> bool:
    """Whether a request's Host header names one of `trusted_hosts` (any port; None: any name).

    Our own check rather than Flask's TRUSTED_HOSTS: Werkzeug 3.1 compares only the text before the first
    colon of each trusted name, so `[::1]` never matched and a console on ::1 answered 400 to everything.
    """
    name = _host_name(host)
    if name is None:
        return False
    if trusted_hosts is None:
        return True
    return name in {_trusted_name(trusted) for trusted in trusted_hosts}


def _trusted_name(trusted: str) -> str:
    """A trusted name as _host_name gives it: `--host ::1` names an IPv6 address without brackets."""
    name = trusted.strip().lower().removeprefix("[").removesuffix("]")
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def create_app(
    client: StepwellClient,
    *,
    access_token: str,
    csrf_token: str | None = None,
    definitions: Callable[[], DefinitionsService] | None = None,
    trusted_hosts: Sequence[str] | None = LOOPBACK_HOSTS,
) -> Flask:
    """The console for `client`'s deployment, answering only requests with `access_token` (in the query
    or the cookie it then sets). `csrf_token` defaults to a fresh random one; `trusted_hosts`: the Host
    names it answers (None: any, for a console served to other machines)."""
    app = Flask(__name__)
    app.secret_key = secrets.token_bytes(32)  # signs the flash messages' session cookie
    token = csrf_token or secrets.token_urlsafe(32)
    access = access_token.encode()
    definitions_service: list[DefinitionsService] = []

    def service() -> DefinitionsService:
        if not definitions_service:
            definitions_service.append(
                definitions() if definitions else DefinitionsService.for_client(client)
            )
        return definitions_service[0]

    @app.context_processor
    def page_globals() -> dict[str, Any]:
        return {
            "csrf_field": CSRF_FIELD,
            "csrf_token": token,
            "deployment": client.config.name,
            "statuses": [status.value for status in ExecutionStatus],
            "stamp": stamp,
        }

    @app.before_request
    def check_host_token_and_csrf() -> Response | None:
        host = request.environ.get("HTTP_HOST", "")
        if not host_allowed(host, trusted_hosts):
            # A page whose domain was re-pointed at this machine (DNS rebinding) gets nothing.
            return _refusal(400, f"the console does not answer to the host {host!r}")
        sent = request.args.get(TOKEN_PARAMETER)
        if sent is not None:
            if not hmac.compare_digest(sent.encode(), access):
                return _refusal(403, "wrong console token: open the URL `stepwell console` printed at start")
            g.set_token_cookie = True
        elif not hmac.compare_digest(request.cookies.get(_cookie_name(), "").encode(), access):
            return _refusal(
                403, "this console needs its token: open the URL `stepwell console` printed (.../?token=...)"
            )
        if request.method == "POST":
            form_token = request.form.get(CSRF_FIELD, "")
            if not hmac.compare_digest(form_token.encode(), token.encode()):
                abort(403, description="missing or wrong form token: reload the page and try again")
        return None

    @app.after_request
    def security_headers(response: Response) -> Response:
        # Only the console's own files, no framing: a page of user data stays inert.
        response.headers["Content-Security-Policy"] = (
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        if g.get("set_token_cookie"):
            # HttpOnly: the page's script never reads it; Strict: no other site's link or form sends it.
            response.set_cookie(_cookie_name(), access_token, httponly=True, samesite="Strict", path="/")
        return response

    @app.errorhandler(ExecutionNotFound)
    def not_found(error: ExecutionNotFound) -> tuple[str, int]:
        return render_template("error.html", message=str(error)), 404

    @app.errorhandler(InvalidArgument)
    @app.errorhandler(RecursionError)
    def bad_input(error: Exception) -> tuple[str | Response, int]:
        # RecursionError: a value (a page token, a query) that decodes to JSON nested too deeply.
        message = (
            str(error) if isinstance(error, InvalidArgument) else "the request's data is nested too deeply"
        )
        if request.path.startswith("/api/"):
            return jsonify({"error": message}), 400
        return render_template("error.html", message=message), 400

    @app.errorhandler(403)
    def forbidden(error: Any) -> tuple[str, int]:
        return render_template("error.html", message=getattr(error, "description", "forbidden")), 403

    @app.get("/")
    def index() -> BaseResponse:
        return redirect(url_for("executions"))

    @app.get("/executions")
    def executions() -> str | tuple[str, int]:
        query = _listing_query(request.args)
        try:
            rows, next_token = _list(client, query)
        except USER_ERRORS as error:
            return render_template(
                "executions.html", query=query, rows=[], next_url=None, error=str(error)
            ), 400
        next_url = None
        if next_token is not None:
            next_url = url_for("executions") + "?" + urlencode({**query, "next_token": next_token})
        return render_template("executions.html", query=query, rows=rows, next_url=next_url, error=None)

    @app.get("/api/executions")
    def api_executions() -> Response | tuple[Response, int]:
        query = _listing_query(request.args)
        try:
            rows, next_token = _list(client, query)
        except USER_ERRORS as error:
            return jsonify({"error": str(error)}), 400
        return jsonify({"Executions": [_record_json(row) for row in rows], "NextToken": next_token})

    @app.get("/execution")
    def execution() -> str:
        execution_id = _required(request.args, "id")
        description = client.describe_execution(execution_id)
        history = client.get_execution_history(execution_id)
        status = ExecutionStatus(description["Status"])
        # The SDK's own operations (a wait_for_callback's callback and submitter) only on request.
        show_internal = request.args.get("internal") == "1"
        rows = timeline.build_rows(history, datetime.now(tz=UTC), show_internal=show_internal)
        return render_template(
            "execution.html",
            execution=description,
            execution_id=execution_id,
            trace_id=trace_id_of(description.get("TraceHeader")),
            # Which buttons: a live one is stopped, paused or resumed, an ended one deleted; the page
            # reloads when a live or deleting one's status changes.
            live=not status.is_terminal,
            paused=status.is_paused,
            deletable=status.is_outcome,
            polled=status is ExecutionStatus.DELETING or not status.is_terminal,
            show_internal=show_internal,
            internal_count=len(internal_operations(history)),
            timeline_svg=Markup(timeline.render_svg(rows)),  # render_svg escapes every text
            legend=timeline.legend(),
            callbacks=timeline.open_callbacks(history),
            input_text=pretty(description.get("InputPayload")),
            result_text=pretty(description.get("Result")) if "Result" in description else None,
            error_text=pretty(description.get("Error")) if "Error" in description else None,
            history_text=pretty(history),
        )

    @app.get("/api/execution")
    def api_execution() -> Response:
        execution_id = _required(request.args, "id")
        return jsonify({"Execution": _jsonable(client.describe_execution(execution_id))})

    @app.post("/execution/stop")
    def stop() -> BaseResponse:
        execution_id = _required(request.form, "id")
        error = _error_object(request.form)

        def stop_it() -> str:
            stopped = client.stop_execution(execution_id, error)
            return f"stopped {execution_id}" if stopped else f"{execution_id} had already ended"

        _act(stop_it)
        return redirect(_execution_url(execution_id))

    @app.post("/execution/pause")
    def pause() -> BaseResponse:
        execution_id = _required(request.form, "id")
        reason = request.form.get("reason", "").strip() or None
        # The form's checkbox is AWS's ExecutionTimeoutPaused false: unchecked, the timeout pauses too.
        timeout_paused = request.form.get("timeout_keeps_running") is None

        def pause_it() -> str:
            if client.pause_execution(execution_id, reason=reason, timeout_paused=timeout_paused):
                return f"pausing {execution_id}: paused once a run in flight reaches its next checkpoint"
            return f"{execution_id} was paused already (the first pause stands)"

        _act(pause_it)
        return redirect(_execution_url(execution_id))

    @app.post("/execution/resume")
    def resume() -> BaseResponse:
        execution_id = _required(request.form, "id")
        reason = request.form.get("reason", "").strip() or None

        def resume_it() -> str:
            if client.resume_execution(execution_id, reason=reason):
                return f"resumed {execution_id}"
            return f"{execution_id} was not paused"

        _act(resume_it)
        return redirect(_execution_url(execution_id))

    @app.post("/execution/delete")
    def delete() -> BaseResponse:
        execution_id = _required(request.form, "id")

        def delete_it() -> str:
            requested_at = client.delete_execution(execution_id)
            return (
                f"deleting {execution_id} (requested {stamp(requested_at)}): DELETING until its items and "
                "payloads are gone, then not found"
            )

        _act(delete_it)
        return redirect(_execution_url(execution_id))

    @app.post("/callback")
    def callback() -> BaseResponse:
        callback_id = _required(request.form, "callback_id")
        outcome = request.form.get("outcome", "")

        def send() -> str:
            if outcome == "success":
                client.send_callback_success(callback_id, request.form.get("result") or None)
            elif outcome == "failure":
                client.send_callback_failure(callback_id, _error_object(request.form))
            else:
                raise ValueError(f"callback outcome {outcome!r} is not one of success, failure")
            return f"callback {callback_id}: {outcome} sent"

        _act(send)
        execution_id = request.form.get("execution_id")
        return redirect(_execution_url(execution_id) if execution_id else url_for("executions"))

    @app.post("/dlq/redrive")
    def redrive() -> BaseResponse:
        def move() -> str:
            result = client.redrive_dlq()
            if result.method == "move-task":
                return f"redrive started (SQS message move task {result.task_handle})"
            return f"moved {result.moved} messages from the DLQ to the work queue"

        _act(move)
        return redirect(url_for("executions"))

    @app.get("/definitions")
    def definitions_page() -> str | tuple[str, int]:
        domain = request.args.get("domain", "").strip()
        listed: list[Any] = []
        error = None
        if domain:
            try:
                listed = service().list_definitions(domain)
            except USER_ERRORS as failure:
                error = str(failure)
        return render_template("definitions.html", domain=domain, definitions=listed, error=error), (
            400 if error else 200
        )

    @app.get("/definition")
    def definition_page() -> str | tuple[str, int]:
        domain = _required(request.args, "domain")
        workflow_id = _required(request.args, "id")
        subject_id = request.args.get("subject", "").strip() or None
        try:
            stored = service().get_definition(domain, workflow_id)
            parsed = parse_definition(stored.definition)
            contexts = []
            if subject_id is not None:
                page = service().list_contexts(domain, subject_id, workflow_id)
                for context in page.items:
                    try:
                        history = service().engine.get_execution_history(context.execution_id)
                    except ExecutionNotFound:
                        history = []
                    states = graph.node_states(parsed, history, context.waiting)
                    contexts.append((context, Markup(graph.render_svg(parsed, states))))
        except USER_ERRORS as error:
            return render_template("error.html", message=str(error)), 400
        return render_template(
            "definition.html",
            stored=stored,
            subject_id=subject_id,
            graph_svg=Markup(graph.render_svg(parsed)),  # render_svg escapes every text
            contexts=contexts,
            document_text=pretty(stored.definition),
        )

    return app


def _cookie_name() -> str:
    return token_cookie_name(str(request.environ.get("SERVER_PORT", "")))


def _refusal(status: int, message: str) -> Response:
    """One line of plain text: no page, so nothing of the console (not even its CSRF token) is shown."""
    return Response(message + "\n", status=status, mimetype="text/plain")


def _act(action: Callable[[], str]) -> None:
    """Run a button's action; its outcome (or the error's one line) is shown on the next page."""
    try:
        flash(action(), "info")
    except USER_ERRORS as error:
        flash(f"{type(error).__name__}: {error}", "error")


def _required(values: Mapping[str, str], name: str) -> str:
    value = values.get(name, "").strip()
    if not value:
        abort(400, description=f"the request needs a non-empty {name!r}")
    return value


def _execution_url(execution_id: str) -> str:
    return url_for("execution") + "?" + urlencode({"id": execution_id})


def _listing_query(args: Mapping[str, str]) -> dict[str, str]:
    """The list filter from the query string: one of status, workflow, domain (+ subject); RUNNING when
    none is given."""
    query = {key: args.get(key, "").strip() for key in ("status", "workflow", "domain", "subject", "limit")}
    query = {key: value for key, value in query.items() if value}
    if not {"status", "workflow", "domain"} & query.keys():
        query["status"] = ExecutionStatus.RUNNING.value
    return query


def _list(client: StepwellClient, query: Mapping[str, str]) -> tuple[list[ExecutionRecord], str | None]:
    limit_text = query.get("limit", str(PAGE_SIZE))
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= MAX_PAGE_SIZE:
        raise ValueError(f"limit {limit_text!r} is not a whole number from 1 to {MAX_PAGE_SIZE}")
    page = client.list_executions(
        status=query.get("status"),
        workflow=query.get("workflow"),
        domain=query.get("domain"),
        subject_id=query.get("subject"),
        limit=int(limit_text),
        next_token=request.args.get("next_token") or None,
    )
    return page.items, page.next_token


def _error_object(form: Mapping[str, str]) -> dict[str, str] | None:
    error = {
        key: form.get(field, "").strip()
        for key, field in (("ErrorType", "error_type"), ("ErrorMessage", "error_message"))
        if form.get(field, "").strip()
    }
    return error or None


def _record_json(record: ExecutionRecord) -> dict[str, Any]:
    return {
        "ExecutionId": record.execution_id,
        "WorkflowName": record.workflow_id,
        "Domain": record.domain,
        "SubjectId": record.subject_id,
        "Status": record.status.value,
        "StartTimestamp": stamp(record.created_at),
        "EndTimestamp": stamp(record.ended_at),
    }


def stamp(epoch: float | None) -> str:
    """An epoch time as ISO-8601 UTC with milliseconds; "" for none."""
    if epoch is None:
        return ""
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=_json_default))


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON-serializable")


def pretty(value: Any) -> str:
    """A value as indented JSON; JSON text is parsed first, other text is shown as it is."""
    if isinstance(value, str):
        text = value
        try:
            value = json.loads(text)
        except ValueError:
            return text
    return json.dumps(value, indent=2, ensure_ascii=False, default=_json_default)
