"""moto's server in a child process on a free 127.0.0.1 port.

A child process, not moto's ``ThreadedMotoServer`` thread: moto keeps its state in module globals,
so an in-process server would share (and lose, on every ``mock_aws`` reset) state with tests that use
moto's decorators; a child also gets its own core for the GIL-heavy request handling.

The child corrects three moto behaviours that differ from AWS (``_disable_moto_sqs_push``: no push of
SQS messages to mapped functions; ``_keep_queue_policy_on_other_updates``: SetQueueAttributes keeps
a policy it does not name; ``_skip_statements_whose_condition_fails``: a policy statement whose
condition is not met does not apply) and adds one route to moto's WSGI app,
``GET /_stepwell/lambda-code?region=..&function=..``, that returns a function's deployed zip:
moto's GetFunction answers with an S3 location it never serves, and the local Lambda runtime needs
the code terraform uploaded.

Run as ``python -m stepwell.testing.moto_server [--host H] [--port P]``; it prints
``STEPWELL_MOTO_PORT=<port>`` on stdout once it listens, and exits when its parent dies.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import IO, Any
from urllib.parse import parse_qs

READY_PREFIX = "STEPWELL_MOTO_PORT="
LAMBDA_CODE_PATH = "/_stepwell/lambda-code"
DEFAULT_ACCOUNT_ID = "123456789012"
START_TIMEOUT_SECONDS = 60.0

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def _lambda_code_bytes(account_id: str, region: str, function_name: str) -> bytes:
    from moto.awslambda.models import lambda_backends

    function = lambda_backends[account_id][region].get_function(function_name)
    code: bytes = function.code_bytes
    return code


def _with_lambda_code_route(app: WsgiApp) -> WsgiApp:
    def wrapped(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != LAMBDA_CODE_PATH:
            return app(environ, start_response)
        query = parse_qs(environ.get("QUERY_STRING", ""))
        region = query.get("region", [""])[0]
        function_name = query.get("function", [""])[0]
        account_id = query.get("account", [DEFAULT_ACCOUNT_ID])[0]
        try:
            body = _lambda_code_bytes(account_id, region, function_name)
        except Exception as error:  # moto raises its own not-found types; any failure is a 404 here
            message = f"no code for function {function_name!r} in {region!r}: {error}".encode()
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [message]
        start_response("200 OK", [("Content-Type", "application/zip"), ("Content-Length", str(len(body)))])
        return [body]

    return wrapped


class _UnpushedMappings(dict[str, Any]):
    """Stands in for a queue's record of its Lambda event source mappings, and records none."""

    def __setitem__(self, key: str, value: Any) -> None:
        return None


def _disable_moto_sqs_push() -> None:
    """moto "invokes" a mapped function synchronously inside SendMessage, in Docker; without Docker
    that receives every visible message again and again (raising receive counts until they redrive).
    Lambda polls instead, and so does the harness's runtime: queues here never learn their mappings
    (the Lambda API still lists them)."""
    from moto.sqs.models import Queue

    original_init = Queue.__init__

    def init_without_push(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.lambda_event_source_mappings = _UnpushedMappings()

    Queue.__init__ = init_without_push  # type: ignore[method-assign]


def _keep_queue_policy_on_other_updates() -> None:
    """moto's SetQueueAttributes drops a queue's Policy whenever the call does not name it, so setting
    the redrive policy (or a visibility timeout) after the queue policy silently removes the policy;
    SQS keeps attributes a call does not mention. Keep it here too."""
    from moto.sqs.models import Queue

    original_set_attributes = Queue._set_attributes

    def set_attributes_keeping_policy(
        self: Any, attributes: dict[str, Any], now: float | None = None
    ) -> None:
        previous_policy = getattr(self, "policy", None)
        original_set_attributes(self, attributes, now)
        if "Policy" not in attributes and previous_policy is not None:
            self.policy = previous_policy

    Queue._set_attributes = set_attributes_keeping_policy  # type: ignore[method-assign]


def _skip_statements_whose_condition_fails() -> None:
    """moto passes no condition values (aws:SecureTransport, ...) to bucket policies and counts a
    condition on a missing key as met, so the payload bucket's "deny without TLS" statement refuses
    every object request; and it answers DENIED for any statement whose condition fails, Allow or Deny.
    In AWS a condition on a missing key is not met (except with ...IfExists and Null), and a statement
    whose condition is not met does not apply: so here."""
    from moto.iam.access_control import IAMPolicyStatement, PermissionResult

    original_is_action_permitted = IAMPolicyStatement.is_action_permitted

    def is_action_permitted(
        self: Any,
        action: str,
        resource: str = "*",
        principal: str | None = None,
        incoming_condition_values: dict[str, str] | None = None,
    ) -> PermissionResult:
        values = incoming_condition_values or {}
        conditions = self._statement.get("Condition") or {}
        missing_key = any(
            key not in values
            for operator, keys in conditions.items()
            if not operator.endswith("IfExists") and operator != "Null"
            for key in keys
        )
        if missing_key or not self._check_conditions(incoming_condition_values):
            return PermissionResult.NEUTRAL
        return original_is_action_permitted(self, action, resource, principal, incoming_condition_values)

    IAMPolicyStatement.is_action_permitted = is_action_permitted  # type: ignore[method-assign]


def _exit_when_parent_dies(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(0)
        time.sleep(1.0)


def serve(host: str, port: int) -> None:
    """Serve moto (plus the lambda-code route) forever; print the bound port once listening."""
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    _disable_moto_sqs_push()
    _keep_queue_policy_on_other_updates()
    _skip_statements_whose_condition_fails()
    app = _with_lambda_code_route(DomainDispatcherApplication(create_backend_app))
    server = make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler)
    threading.Thread(target=_exit_when_parent_dies, args=(os.getppid(),), daemon=True).start()
    print(f"{READY_PREFIX}{server.server_address[1]}", flush=True)
    server.serve_forever()


class MotoServer:
    """A running moto server child process."""

    def __init__(
        self, process: subprocess.Popen[str], host: str, port: int, log: IO[bytes] | None = None
    ) -> None:
        self.process = process
        self.host = host
        self.port = port
        self._log = log

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def lambda_code(self, region: str, function_name: str, account_id: str = DEFAULT_ACCOUNT_ID) -> bytes:
        """The deployed zip of a function, as moto stored it."""
        url = (
            f"{self.endpoint_url}{LAMBDA_CODE_PATH}?region={region}&function={function_name}"
            f"&account={account_id}"
        )
        with urllib.request.urlopen(url, timeout=30) as response:
            body: bytes = response.read()
        return body

    def reset(self) -> None:
        """Drop every resource moto holds (moto's own reset API)."""
        request = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=30):
            pass

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        if self._log is not None:
            self._log.close()


def _read_ready_port(stdout: IO[str], process: subprocess.Popen[str]) -> int:
    found: list[int] = []

    def reader() -> None:
        for line in stdout:
            if line.startswith(READY_PREFIX):
                found.append(int(line[len(READY_PREFIX) :].strip()))
                return

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    thread.join(START_TIMEOUT_SECONDS)
    if not found:
        process.kill()
        process.wait()
        raise RuntimeError(
            f"moto server did not report its port within {START_TIMEOUT_SECONDS:.0f} s "
            f"(exit code {process.returncode})"
        )
    return found[0]


def start_moto_server(host: str = "127.0.0.1", log_path: str | None = None) -> MotoServer:
    """Start moto's server on a free port of ``host``; the caller stops it (or use ``moto_server()``)."""
    # The log file outlives this call: the server closes it when it stops.
    log = open(log_path, "ab") if log_path else None  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "stepwell.testing.moto_server", "--host", host, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=log if log is not None else subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    port = _read_ready_port(process.stdout, process)
    server = MotoServer(process, host, port, log)
    _wait_until_answering(server)
    return server


def _wait_until_answering(server: MotoServer) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        try:
            with urllib.request.urlopen(f"{server.endpoint_url}/moto-api/data.json", timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline or server.process.poll() is not None:
                server.stop()
                raise RuntimeError(f"moto server at {server.endpoint_url} never answered") from None
            time.sleep(0.1)


@contextmanager
def moto_server(host: str = "127.0.0.1", log_path: str | None = None) -> Iterator[MotoServer]:
    """Context manager: a moto server for the duration of the block."""
    server = start_moto_server(host, log_path)
    try:
        yield server
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="moto's server plus Stepwell's lambda-code route")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    serve(args.host, args.port)


if __name__ == "__main__":
    main()
