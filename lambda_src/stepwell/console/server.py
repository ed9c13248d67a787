"""Serving the console: in the foreground for `stepwell console`, or in a thread for tests and scripts."""

from __future__ import annotations

import ipaddress
import threading
import webbrowser
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from werkzeug.serving import BaseWSGIServer, make_server

from stepwell.client import StepwellClient
from stepwell.console.app import LOOPBACK_HOSTS, create_app

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080


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


def build_server(
    client: StepwellClient, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT
) -> BaseWSGIServer:
    """A threaded WSGI server for the console on (host, port); port 0 picks a free one."""
    trusted = (*LOOPBACK_HOSTS, host) if host not in ("0.0.0.0", "::") else None
    return make_server(host, port, create_app(client, trusted_hosts=trusted), threaded=True)


def url_of(server: BaseWSGIServer) -> str:
    host = server.host if ":" not in server.host else f"[{server.host}]"
    return f"http://{host}:{server.port}/"


def serve(
    client: StepwellClient,
    out: TextIO,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    open_browser: bool = False,
    allow_remote: bool = False,
) -> None:
    """Serve until interrupted (Ctrl-C)."""
    check_host(host, allow_remote)
    server = build_server(client, host, port)
    url = url_of(server)
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
def running_console(client: StepwellClient, host: str = DEFAULT_HOST, port: int = 0) -> Iterator[str]:
    """The console served from a background thread while the block runs; yields its URL."""
    server = build_server(client, host, port)
    thread = threading.Thread(target=server.serve_forever, name="stepwell-console", daemon=True)
    thread.start()
    try:
        yield url_of(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
