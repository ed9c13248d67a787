"""What the tests of the `stepwell.http` action share: a local server on 127.0.0.1 standing in for the
internet, the operator's allowlist set through the environment, a resolver answering chosen names, and
the action called as a definition's run calls it."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from stepwell.features.definitions import outbound
from stepwell.features.definitions.actions import PermanentActionError, http_request

from ..test_actions import context


class _Handler(BaseHTTPRequestHandler):
    requests: list[tuple[str, str, dict[str, str]]]

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        url = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(url.query).items()}
        self.requests.append((self.command, self.path, dict(self.headers.items())))
        if url.path == "/dribble":  # the status line, then a header byte now and then, forever
            self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            for _ in range(100):
                self.wfile.write(b"a")
                self.wfile.flush()
                time.sleep(0.2)
            return
        if url.path == "/head":  # `continues` 100 Continue heads, then `count` headers of `size` bytes
            self.wfile.write(_head(query))
            return
        if url.path == "/raw":  # a 200 whose body is `body` as given
            raw = query["body"].encode()
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
            self.wfile.write(b"Content-Length: %d\r\n\r\n%s" % (len(raw), raw))
            return
        if url.path == "/loop":
            query.update(status="302", to=self.path)
        if url.path == "/slow":
            time.sleep(float(query["seconds"]))
        if url.path == "/stream":  # no Content-Length: the body ends when the connection closes
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"x" * int(query["bytes"]))
            return
        length = int(self.headers.get("Content-Length", "0"))
        received = self.rfile.read(length).decode() if length else None
        status = int(query.get("status", "200"))
        payload = json.dumps(
            {
                "method": self.command,
                "path": url.path,
                "host": self.headers.get("Host"),
                "authorization": self.headers.get("Authorization"),
                "body": received,
            }
        ).encode()
        if url.path == "/big":
            payload = b"x" * int(query["bytes"])
        self.send_response(status)
        if "to" in query:
            self.send_header("Location", query["to"])
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return


def _head(query: dict[str, str]) -> bytes:
    """An answer's head and a body of {}: `continues` 100 Continue heads of one `size`-byte header each,
    then a 200 with Content-Length and `count` headers of `size` bytes, and with `total` a header filling
    the 200's head (status line, header lines and the blank line) to exactly `total` bytes."""
    count, size = int(query.get("count", "0")), int(query.get("size", "1"))
    interim = b"HTTP/1.1 100 Continue\r\nX-Interim: " + b"i" * size + b"\r\n\r\n"
    lines = [b"HTTP/1.1 200 OK\r\n", b"Content-Length: 2\r\n"]
    lines += [b"X-H%d: %s\r\n" % (i, b"h" * size) for i in range(count)]
    if "total" in query:
        fill = int(query["total"]) - sum(map(len, lines)) - len(b"X-Fill: \r\n\r\n")
        lines.append(b"X-Fill: " + b"f" * fill + b"\r\n")
    return interim * int(query.get("continues", "0")) + b"".join(lines) + b"\r\n{}"


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that hung up on purpose (deadline, size bound) is not an error here


class Server:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        handler = type("Handler", (_Handler,), {"requests": []})
        self.requests: list[tuple[str, str, dict[str, str]]] = handler.requests
        self.httpd = _QuietServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def allow(monkeypatch: pytest.MonkeyPatch, allowlist: list[str], networks: list[str] | None = None) -> None:
    monkeypatch.setenv(outbound.ALLOWLIST_ENV, json.dumps(allowlist))
    monkeypatch.setenv(outbound.ALLOWED_NETWORKS_ENV, json.dumps(networks or []))


def resolve_names(monkeypatch: pytest.MonkeyPatch, names: dict[str, list[str]]) -> list[str]:
    """Make the resolver answer `names` (other hosts resolve as usual); returns the names looked up."""
    real = socket.getaddrinfo
    looked_up: list[str] = []

    def fake(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in names:
            return real(host, port, *args, **kwargs)
        looked_up.append(host)
        return [
            (
                socket.AF_INET6 if ":" in address else socket.AF_INET,
                socket.SOCK_STREAM,
                6,
                "",
                (address, port),
            )
            for address in names[host]
        ]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return looked_up


def call(inputs: dict[str, Any]) -> Any:
    return http_request(inputs, context())


def refused(inputs: dict[str, Any], *fragments: str) -> str:
    with pytest.raises(PermanentActionError) as caught:
        call(inputs)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    return message
