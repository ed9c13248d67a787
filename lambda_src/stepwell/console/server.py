"""Serving the console: in the foreground for `stepwell console`, or in a thread for tests and scripts."""

from __future__ import annotations

import ipaddress
import os
import threading
import webbrowser
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TextIO
from urllib.parse import urlencode

from werkzeug.serving import BaseWSGIServer, make_server

from stepwell.client import StepwellClient
from stepwell.console.app import (
    LOOPBACK_HOSTS,
    TOKEN_PARAMETER,
    check_access_token,
    create_app,
    new_access_token,
)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
# A token chosen by a script that starts the console (never a command-line option: other users of the
# machine can read a process's arguments).
TOKEN_VARIABLE = "STEPWELL_CONSOLE_TOKEN"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_host(host: str, allow_remote: bool) -> None:
    """Only the operator's own machine, unless they say otherwise: the console acts with their credentials."""
    if not is_loopback(host) and not allow_remote:
        raise ValueError(
            f"--host {host!r} is not a loopback address: anyone who reaches it could act with your AWS "
            "credentials; pass --allow-remote to serve it anyway"
        )


def access_token_from(environ: Mapping[str, str]) -> str:
    """STEPWELL_CONSOLE_TOKEN when set (checked), else a fresh random token."""
    chosen = environ.get(TOKEN_VARIABLE)
    return new_access_token() if chosen is None else check_access_token(chosen)


def build_server(
    client: StepwellClient, access_token: str, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT
) -> BaseWSGIServer:
    """A threaded WSGI server for the console on (host, port); port 0 picks a free one."""
    trusted = (*LOOPBACK_HOSTS, host) if host not in ("0.0.0.0", "::") else None
    app = create_app(client, access_token=access_token, trusted_hosts=trusted)
    return make_server(host, port, app, threaded=True)


def url_of(server: BaseWSGIServer) -> str:
    host = server.host if ":" not in server.host else f"[{server.host}]"
    return f"http://{host}:{server.port}/"


def start_url(server: BaseWSGIServer, access_token: str) -> str:
    """The URL to open: the console's root with its token, which the first page turns into a cookie."""
    return f"{url_of(server)}?{urlencode({TOKEN_PARAMETER: access_token})}"


def serve(
    client: StepwellClient,
    out: TextIO,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    open_browser: bool = False,
    allow_remote: bool = False,
) -> None:
    """Serve until interrupted (Ctrl-C)."""
    check_host(host, allow_remote)
    access_token = access_token_from(os.environ)
    server = build_server(client, access_token, host, port)
    url = start_url(server, access_token)
    if not is_loopback(host):
        out.write(f"warning: the console on {host} is reachable from other machines and acts as you\n")
    out.write(f"Stepwell console for {client.config.name!r} on {url} (Ctrl-C stops it)\n")
    out.flush()
    if open_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@contextmanager
def running_console(
    client: StepwellClient, host: str = DEFAULT_HOST, port: int = 0, access_token: str | None = None
) -> Iterator[str]:
    """The console served from a background thread while the block runs; yields its start URL (with the
    token: `access_token`, or a fresh one)."""
    access_token = access_token or new_access_token()
    server = build_server(client, access_token, host, port)
    thread = threading.Thread(target=server.serve_forever, name="stepwell-console", daemon=True)
    thread.start()
    try:
        yield start_url(server, access_token)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
