"""The `stepwell.http` action reaches only what the operator allowed, within bounded time and size.

A local server on 127.0.0.1 stands in for the internet: the tests that must reach it allow its port in the
allowlist and the loopback network explicitly, as an operator would for a private service.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import re
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stepwell.features.definitions import outbound
from stepwell.features.definitions.actions import (
    HTTP,
    ActionContext,
    ActionError,
    PermanentActionError,
    http_request,
)
from stepwell.features.definitions.outbound import OutboundPolicy, RequestRefused, non_public_reason

from .harness import Harness
from .test_actions import context
from .test_nodes import graph


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


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    try:
        yield running
    finally:
        running.close()


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


# --- requests that go out -------------------------------------------------------------------------


def test_an_allowed_request_and_the_answer_classes(monkeypatch: pytest.MonkeyPatch, server: Server) -> None:
    allow(
        monkeypatch,
        [f"127.0.0.1:{server.port}", f"[::ffff:127.0.0.1]:{server.port}", "127.0.0.1:1"],
        ["127.0.0.0/8"],
    )
    mapped = call({"url": f"http://[::ffff:127.0.0.1]:{server.port}/ok"})  # the allowed network, as IPv6
    assert mapped["status"] == 200
    result = call(
        {"url": f"{server.url}/ok", "method": "post", "body": {"a": 1}, "headers": {"Authorization": "t"}}
    )
    assert result["status"] == 200
    assert result["body"] == {
        "method": "POST",
        "path": "/ok",
        "host": f"127.0.0.1:{server.port}",
        "authorization": "t",
        "body": '{"a": 1}',
    }
    with pytest.raises(ActionError, match="HTTP 503") as retryable:
        call({"url": f"{server.url}/down?status=503"})
    assert not isinstance(retryable.value, PermanentActionError)
    with pytest.raises(PermanentActionError, match="HTTP 404"):
        call({"url": f"{server.url}/missing?status=404"})
    with pytest.raises(PermanentActionError, match="method 'BREW' is not one of"):
        call({"url": f"{server.url}/ok", "method": "brew"})
    with pytest.raises(ActionError, match="cannot connect") as unreachable:
        call({"url": "http://127.0.0.1:1/", "timeoutSeconds": 2})
    assert not isinstance(unreachable.value, PermanentActionError)


def test_the_connection_goes_to_the_checked_address_with_the_url_host(
    monkeypatch: pytest.MonkeyPatch, server: Server
) -> None:
    allow(monkeypatch, ["api.partner.test:" + str(server.port)], ["127.0.0.1/32"])
    looked_up = resolve_names(monkeypatch, {"api.partner.test": ["127.0.0.1"]})
    result = call({"url": f"http://api.partner.test:{server.port}/ok"})
    assert result["body"]["host"] == f"api.partner.test:{server.port}"
    assert looked_up == ["api.partner.test"]  # one lookup: nothing a rebinding DNS could answer twice


def test_https_verifies_the_url_host_on_the_pinned_address(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=api.partner.test"),
            *("-addext", "subjectAltName=DNS:api.partner.test"),
        ],
        check=True,
        capture_output=True,
    )
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    client_tls = ssl.create_default_context(cafile=str(cert))
    tls_server = Server(server_tls)
    try:
        resolve_names(monkeypatch, {"api.partner.test": ["127.0.0.1"], "other.partner.test": ["127.0.0.1"]})
        policy = OutboundPolicy.parse(["*.partner.test:" + str(tls_server.port)], ["127.0.0.0/8"])

        def get(host: str) -> outbound.Response:
            url = f"https://{host}:{tls_server.port}/ok"
            return outbound.send(policy, "GET", url, {}, body=None, timeout=5, max_bytes=1000, tls=client_tls)

        answer = get("api.partner.test")
        assert (
            answer.status == 200 and json.loads(answer.body)["host"] == f"api.partner.test:{tls_server.port}"
        )
        with pytest.raises(outbound.RequestFailed, match="SSLCertVerificationError"):
            get("other.partner.test")  # same address, but the certificate is not for this name
    finally:
        tls_server.close()


# --- the allowlist ----------------------------------------------------------------------------------


def test_an_empty_allowlist_disables_the_action(monkeypatch: pytest.MonkeyPatch, server: Server) -> None:
    monkeypatch.delenv(outbound.ALLOWLIST_ENV, raising=False)
    monkeypatch.setenv(outbound.ALLOWED_NETWORKS_ENV, json.dumps(["127.0.0.0/8"]))
    refused({"url": f"{server.url}/ok"}, f"'{server.url}/ok'", "outbound HTTP is disabled", "http_allowlist")
    assert server.requests == []


def test_a_url_outside_the_allowlist_is_refused(monkeypatch: pytest.MonkeyPatch, server: Server) -> None:
    allow(monkeypatch, [f"http://127.0.0.1:{server.port}/v1"], ["127.0.0.0/8"])
    assert call({"url": f"{server.url}/v1"})["status"] == 200
    assert call({"url": f"{server.url}/v1/orders?id=1"})["status"] == 200
    for path in ("/v2", "/v1evil", "/"):
        refused({"url": server.url + path}, f"'{server.url}{path}'", "matches no entry of the allowlist")
    refused({"url": f"http://127.0.0.1:{server.port + 1}/v1"}, "matches no entry")
    assert [path for _, path, _ in server.requests] == ["/v1", "/v1/orders?id=1"]


@pytest.mark.parametrize(
    ("entry", "url", "allowed"),
    [
        ("api.example.com", "https://api.example.com/x", True),
        ("api.example.com", "http://api.example.com/x", True),
        ("api.example.com", "https://API.Example.com/x", True),
        ("api.example.com", "https://api.example.com:8443/x", False),
        ("api.example.com", "https://evil.api.example.com/x", False),
        ("api.example.com", "https://api.example.com.evil.test/x", False),
        ("api.example.com:8443", "https://api.example.com:8443/x", True),
        ("api.example.com:8443", "https://api.example.com/x", False),
        ("*.example.com", "https://a.b.example.com/x", True),
        ("*.example.com", "https://example.com/x", False),
        ("*.example.com", "https://badexample.com/x", False),
        ("https://api.example.com/v1/", "https://api.example.com/v1/x", True),
        ("https://api.example.com/v1/", "http://api.example.com/v1/x", False),
        ("https://api.example.com/v1/", "https://api.example.com/v1", False),
        ("https://api.example.com/v1", "https://api.example.com/v1", True),
        ("https://api.example.com/v1", "https://api.example.com/v10", False),
        ("https://api.example.com:443/", "https://api.example.com/anything", True),
        ("http://[2001:4860::8888]/", "http://[2001:4860::8888]/x", True),
    ],
)
def test_allowlist_entries(entry: str, url: str, allowed: bool) -> None:
    policy = OutboundPolicy.parse([entry], [])
    if allowed:
        assert policy.check_url(url).url == url
    else:
        with pytest.raises(RequestRefused, match="matches no entry of the allowlist"):
            policy.check_url(url)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("", "non-empty string"),
        (" api.example.com", "non-empty string"),
        ("api.example.com/v1", "give a path as a URL prefix"),
        ("*.*.example.com", "host[:port] or *.domain[:port]"),
        ("api.*.com", "host[:port] or *.domain[:port]"),
        ("*.10.0.0.1", "a wildcard needs a domain"),
        ("ftp://example.com/", "scheme must be http or https"),
        ("https://example.com", "a URL prefix is http(s)://host[:port]/path"),
        ("https://example.com/?q=1", "a URL prefix is http(s)://host[:port]/path"),
        ("https://user@example.com/", "user info"),
        ("example.com:99999", "port must be a number"),
        ("exa mple.com", "not a DNS name"),
        ("0x7f.1", "not a canonical IPv4 address"),
    ],
)
def test_bad_allowlist_entries_are_named(entry: str, reason: str) -> None:
    with pytest.raises(RequestRefused, match="allowlist entry") as caught:
        OutboundPolicy.parse([entry], [])
    assert repr(entry) in str(caught.value) and reason in str(caught.value)


def test_bad_settings_fail_the_action_naming_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(outbound.ALLOWLIST_ENV, "api.example.com")
    refused({"url": "https://api.example.com/"}, "STEPWELL_HTTP_ALLOWLIST must be a JSON list of strings")
    allow(monkeypatch, ["api.example.com"], ["10.0.0.0/33"])
    refused({"url": "https://api.example.com/"}, "allowed network '10.0.0.0/33': must be a CIDR block")


# --- URL tricks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://2130706433/", "not a canonical IPv4 address"),
        ("http://0x7f.1/", "not a canonical IPv4 address"),
        ("http://0177.0.0.1/", "not a canonical IPv4 address"),
        ("http://127.1/", "not a canonical IPv4 address"),
        ("http://0x7f000001/", "not a canonical IPv4 address"),
        ("http://allowed.example.com@127.0.0.1/", "user info"),
        ("http://allowed.example.com:x@127.0.0.1/", "user info"),
        ("http://allowed.example.com/a/../../admin", "dot segments"),
        ("http://allowed.example.com/a/%2e%2e/admin", "dot segments"),
        ("http://allowed.example.com/a/..%2fadmin", "dot segments"),
        ("http://allowed.example.com\\@127.0.0.1/", "backslashes"),
        ("http://allowed.example.com/\r\nX-Injected: 1", "control characters"),
        ("file:///etc/passwd", "scheme must be http or https"),
        ("gopher://allowed.example.com/", "scheme must be http or https"),
        ("http:///path", "no host"),
        ("http://allowed.example.com:0/", "port must be a number"),
        ("http://allowed.exämple.com/", "must be ASCII"),
        ("http://allowed.example.com/na\u00efve", "must be ASCII"),
        ("http://[::1/", "not a URL"),
        ("http://%31%32%37.0.0.1/", "not a DNS name"),
    ],
)
def test_url_tricks_are_refused_before_any_lookup(
    monkeypatch: pytest.MonkeyPatch, url: str, reason: str
) -> None:
    allow(monkeypatch, ["allowed.example.com", "127.0.0.1"], ["0.0.0.0/0", "::/0"])
    looked_up = resolve_names(monkeypatch, {"allowed.example.com": ["127.0.0.1"]})
    refused({"url": url}, repr(url), reason)
    assert looked_up == []


# --- addresses ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:{port}/ok", "127.0.0.1, a loopback address"),
        ("http://[::1]:{port}/ok", "::1, a loopback address"),
        ("http://[::ffff:127.0.0.1]:{port}/ok", "127.0.0.1, a loopback address"),
        ("http://[::ffff:169.254.169.254]:{port}/", "169.254.169.254, a link-local address"),
        ("http://[64:ff9b::a9fe:a9fe]:{port}/", "link-local (as IPv6 64:ff9b::a9fe:a9fe)"),
        ("http://[2002:a00:1::]:{port}/", "private (as IPv6 2002:a00:1::)"),
        ("http://169.254.169.254:{port}/latest/meta-data/", "link-local"),
        ("http://[fe80::1]:{port}/", "link-local"),
        ("http://10.1.2.3:{port}/", "private"),
        ("http://172.16.0.1:{port}/", "private"),
        ("http://192.168.1.1:{port}/", "private"),
        ("http://[fd00::1]:{port}/", "private"),
        ("http://100.64.0.1:{port}/", "shared (CGNAT)"),
        ("http://224.0.0.1:{port}/", "multicast"),
        ("http://[ff02::1]:{port}/", "multicast"),
        ("http://0.0.0.0:{port}/", "unspecified"),
        ("http://[::]:{port}/", "unspecified"),
        ("http://240.0.0.1:{port}/", "reserved"),
        ("http://255.255.255.255:{port}/", "reserved"),
    ],
)
def test_non_public_addresses_are_refused_without_an_allowed_network(
    monkeypatch: pytest.MonkeyPatch, server: Server, url: str, reason: str
) -> None:
    url = url.format(port=server.port)
    host = urlsplit(url).hostname
    assert host is not None
    allow(monkeypatch, [f"[{host}]:{server.port}" if ":" in host else f"{host}:{server.port}"])
    refused({"url": url}, repr(url), reason, "http_allowed_networks")
    assert server.requests == []


def test_a_name_resolving_to_a_private_address_is_refused(
    monkeypatch: pytest.MonkeyPatch, server: Server
) -> None:
    allow(monkeypatch, ["*.partner.test:" + str(server.port)], ["10.0.0.0/8"])
    resolve_names(
        monkeypatch,
        {
            "inside.partner.test": ["127.0.0.1"],
            "mixed.partner.test": ["8.8.8.8", "192.168.0.7"],
            "metadata.partner.test": ["169.254.169.254"],
        },
    )
    refused({"url": f"http://inside.partner.test:{server.port}/"}, "resolves to 127.0.0.1, a loopback")
    refused({"url": f"http://mixed.partner.test:{server.port}/"}, "resolves to 192.168.0.7, a private")
    refused({"url": f"http://metadata.partner.test:{server.port}/"}, "169.254.169.254, a link-local")
    assert server.requests == []


def test_address_classes() -> None:
    for public in ("8.8.8.8", "1.1.1.1", "2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808"):
        assert non_public_reason(ipaddress.ip_address(public)) is None, public
    assert non_public_reason(ipaddress.ip_address("::127.0.0.1")) == "loopback (as IPv6 ::7f00:1)"
    teredo_to_public, teredo_to_loopback = "2001:0:4136:e378:8000:63bf:f7f7:f7f7", "2001::63bf:80ff:fffe"
    assert non_public_reason(ipaddress.ip_address(teredo_to_public)) is None
    assert (
        non_public_reason(ipaddress.ip_address(teredo_to_loopback))
        == f"loopback (as IPv6 {teredo_to_loopback})"
    )
    assert non_public_reason(ipaddress.ip_address("192.0.2.1")) == "reserved"


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("64:ff9b:1::a9fe:a9fe", "IPv4 translation (local-use NAT64, SIIT)"),
        ("64:ff9b:1::808:808", "IPv4 translation (local-use NAT64, SIIT)"),
        ("::ffff:0:a9fe:a9fe", "IPv4 translation (local-use NAT64, SIIT)"),
        ("::ffff:0:808:808", "IPv4 translation (local-use NAT64, SIIT)"),
        ("::ffff:a9fe:a9fe", "link-local"),  # the mapped form (::ffff:0:0/96) is read as its IPv4 address
        ("5f00::1", "reserved"),
        ("3fff::1", "reserved"),
        ("3fff:fff::1", "reserved"),
        ("100:0:0:1::1", "reserved"),
    ],
)
def test_ipv6_ranges_that_are_no_hosts_own_are_refused(address: str, reason: str) -> None:
    """Python 3.11's is_global calls these global: the explicit list refuses them."""
    policy = OutboundPolicy.parse(["api.example.com"], [])
    with pytest.raises(RequestRefused, match=re.escape(f"a {reason} address")):
        policy.check_addresses(outbound.parse_url("https://api.example.com/"), [address])
    assert non_public_reason(ipaddress.ip_address("3fff:1000::1")) is None  # just past 3fff::/20


# --- redirects ----------------------------------------------------------------------------------------


def test_redirects_are_followed_only_where_allowed(monkeypatch: pytest.MonkeyPatch, server: Server) -> None:
    other = f"other.partner.test:{server.port}"
    allow(monkeypatch, [f"127.0.0.1:{server.port}", other, "metadata.partner.test"], ["127.0.0.0/8"])
    resolve_names(
        monkeypatch, {"other.partner.test": ["127.0.0.1"], "metadata.partner.test": ["169.254.169.254"]}
    )
    hop = call({"url": f"{server.url}/r?status=302&to=/ok", "headers": {"Authorization": "t"}})
    assert hop["body"]["path"] == "/ok" and hop["body"]["authorization"] == "t"
    cross = call(
        {"url": f"{server.url}/r?status=307&to=http://{other}/ok", "headers": {"Authorization": "t"}}
    )
    assert cross["body"]["host"] == other and cross["body"]["authorization"] is None
    posted = call({"url": f"{server.url}/r?status=303&to=/ok", "method": "POST", "body": {"a": 1}})
    assert posted["body"]["method"] == "GET" and posted["body"]["body"] is None
    kept = call({"url": f"{server.url}/r?status=308&to=/ok", "method": "POST", "body": {"a": 1}})
    assert kept["body"]["method"] == "POST" and kept["body"]["body"] == '{"a": 1}'
    not_followed = call({"url": f"{server.url}/r?status=302&to=/ok", "followRedirects": False})
    assert not_followed["status"] == 302 and not_followed["headers"]["Location"] == "/ok"
    server.requests.clear()

    to_metadata = "http://metadata.partner.test/latest/meta-data/"
    refused(
        {"url": f"{server.url}/r?status=302&to={to_metadata}"},
        "redirect from",
        "169.254.169.254, a link-local",
    )
    refused({"url": f"{server.url}/r?status=301&to=http://evil.test/"}, "redirect from", "matches no entry")
    refused({"url": f"{server.url}/r?status=302&to=http://2130706433/"}, "redirect from", "canonical IPv4")
    assert [path for _, path, _ in server.requests] == [
        f"/r?status=302&to={to_metadata}",
        "/r?status=301&to=http://evil.test/",
        "/r?status=302&to=http://2130706433/",
    ]
    server.requests.clear()
    refused({"url": f"{server.url}/loop"}, f"'{server.url}/loop'", "more than 5 redirects")
    assert len(server.requests) == 6


def test_a_redirect_to_another_origin_carries_only_the_safe_headers(
    monkeypatch: pytest.MonkeyPatch, server: Server
) -> None:
    """A tenant's secret may sit in a header of any name: only Accept, Accept-Language, Content-Type and
    User-Agent follow a redirect to another origin; the same origin gets them all."""
    other = f"other.partner.test:{server.port}"
    allow(monkeypatch, [f"127.0.0.1:{server.port}", other], ["127.0.0.0/8"])
    resolve_names(monkeypatch, {"other.partner.test": ["127.0.0.1"]})
    headers = {
        "X-Api-Key": "secret",
        "Authorization": "Bearer t",
        "Cookie": "s=1",
        "Accept": "application/json",
        "Accept-Language": "de",
        "User-Agent": "tenant/1",
        "X-Trace": "abc",
    }
    call(
        {
            "url": f"{server.url}/r?status=307&to=http://{other}/ok",
            "method": "POST",
            "headers": headers,
            "body": {},
        }
    )
    call({"url": f"{server.url}/r?status=307&to=/ok", "headers": headers})
    (_, _, first), (_, _, crossed), _, (_, _, same) = server.requests
    assert {k: v for k, v in first.items() if k in headers} == headers
    assert {k: v for k, v in crossed.items() if k in headers} == {
        "Accept": "application/json",
        "Accept-Language": "de",
        "User-Agent": "tenant/1",
    }
    assert crossed["Content-Type"] == "application/json"  # a 307 keeps the body, so its type
    assert {k: v for k, v in same.items() if k in headers} == headers


def test_a_redirect_from_https_to_http_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = OutboundPolicy.parse(["api.example.com"], [])
    calls: list[str] = []

    def exchange(*args: Any, **_: Any) -> outbound.Response:
        target: outbound.Target = args[1]
        calls.append(target.url)
        return outbound.Response(
            status=302, headers={}, body=b"", url=target.url, location="http://api.example.com/plain"
        )

    monkeypatch.setattr(outbound, "_exchange", exchange)
    with pytest.raises(RequestRefused, match=r"to 'http://api\.example\.com/plain' refused: https to http"):
        outbound.send(policy, "GET", "https://api.example.com/", {}, body=None, timeout=5, max_bytes=10)
    assert calls == ["https://api.example.com/"]


# --- bounds -------------------------------------------------------------------------------------------


def test_the_response_size_is_bounded(monkeypatch: pytest.MonkeyPatch, server: Server) -> None:
    allow(monkeypatch, [f"127.0.0.1:{server.port}"], ["127.0.0.0/8"])
    assert len(call({"url": f"{server.url}/big?bytes=1000", "maxResponseBytes": 1000})["body"]) == 1000
    refused(
        {"url": f"{server.url}/big?bytes=1001", "maxResponseBytes": 1000},
        "larger than 1000 bytes (maxResponseBytes): it announces 1001 bytes",
    )
    refused(
        {"url": f"{server.url}/stream?bytes=200000", "maxResponseBytes": 100000},
        "larger than 100000 bytes (maxResponseBytes): it sent more",
    )
    refused({"url": f"{server.url}/ok", "maxResponseBytes": 20 * 1024 * 1024}, "maxResponseBytes must be")


def test_the_response_head_is_bounded_whatever_max_response_bytes_says(
    monkeypatch: pytest.MonkeyPatch, server: Server
) -> None:
    """The probe's server sent 95 headers of 65,000 bytes to a call with maxResponseBytes 100 and the
    result held 6,175,545 bytes of headers. The head is refused as it is read, past 64 KiB or 99 fields."""
    allow(monkeypatch, [f"127.0.0.1:{server.port}"], ["127.0.0.0/8"])
    limit = outbound.MAX_HEADER_BYTES
    assert (limit, outbound.MAX_HEADER_FIELDS) == (65536, 99)

    at_limit = call({"url": f"{server.url}/head?total={limit}", "maxResponseBytes": 100})
    assert at_limit["status"] == 200 and at_limit["body"] == {}
    assert sum(len(name) + len(value) for name, value in at_limit["headers"].items()) < limit
    refused(
        {"url": f"{server.url}/head?total={limit + 1}"},
        f"the response's status line and headers are larger than {limit} bytes",
        f"{limit + 1} bytes read before their end",
    )
    refused(
        {"url": f"{server.url}/head?count=95&size=65000", "maxResponseBytes": 100},
        f"larger than {limit} bytes (the limit on an answer's head, whatever maxResponseBytes says)",
    )
    # Content-Length and 98 more fields are 99; a 100th is refused, with a name of its own (http.client
    # would fail the 100th with a bare "got more than 100 headers", as a retryable network error).
    assert call({"url": f"{server.url}/head?count=98"})["status"] == 200
    refused({"url": f"{server.url}/head?count=99"}, "more than 99 header lines", "line 100 arrived after")
    # The heads of 100 Continue answers, which http.client reads and drops, count as well.
    assert call({"url": f"{server.url}/head?continues=3&size=1000"})["status"] == 200
    refused({"url": f"{server.url}/head?continues=20&size=4000"}, f"larger than {limit} bytes")


def test_the_whole_exchange_is_bounded_in_time(monkeypatch: pytest.MonkeyPatch, server: Server) -> None:
    allow(monkeypatch, [f"127.0.0.1:{server.port}"], ["127.0.0.0/8"])
    for path in ("/slow?seconds=5", "/dribble"):
        started = time.monotonic()
        with pytest.raises(ActionError, match="no complete answer within 1 s") as caught:
            call({"url": server.url + path, "timeoutSeconds": 1})
        assert not isinstance(caught.value, PermanentActionError)  # a later attempt may be faster
        assert time.monotonic() - started < 2.5, path


def test_a_request_ends_within_its_invocation(monkeypatch: pytest.MonkeyPatch, server: Server) -> None:
    """timeoutSeconds (up to 300) is cut to what the invocation has left but the reserve for recording
    the result: a request outliving its invocation would be made again, with the rest of its batch."""
    allow(monkeypatch, [f"127.0.0.1:{server.port}"], ["127.0.0.0/8"])
    left = 11.5  # the reserve (10 s) and 1.5 s

    def ending() -> ActionContext:
        return dataclasses.replace(context(), time_left=lambda: left)

    started = time.monotonic()
    with pytest.raises(ActionError, match=r"no complete answer within 1\.5 s") as caught:
        http_request({"url": f"{server.url}/slow?seconds=5", "timeoutSeconds": 300}, ending())
    assert not isinstance(caught.value, PermanentActionError)
    assert time.monotonic() - started < 3
    assert http_request({"url": f"{server.url}/ok"}, ending())["status"] == 200  # a quick answer fits

    left = 10.5  # under a second past the reserve: no request, a retry in a later invocation
    with pytest.raises(ActionError, match=r"the invocation has 10\.5 s left, under the 11 s a request needs"):
        http_request({"url": f"{server.url}/ok"}, ending())


def test_name_resolution_is_inside_the_deadline() -> None:
    """getaddrinfo has no timeout: a slow DNS server took 4 s of a request given 1 s."""
    policy = OutboundPolicy.parse(["api.example.com"], [])
    lookups: list[str] = []

    def slow(host: str, port: int) -> list[str]:
        lookups.append(host)
        time.sleep(4)
        return ["8.8.8.8"]

    started = time.monotonic()
    with pytest.raises(
        outbound.RequestFailed, match=r"no complete answer within 1 s \(resolving api\.example\.com\)"
    ):
        outbound.send(
            policy, "GET", "https://api.example.com/", {}, body=None, timeout=1, max_bytes=10, resolver=slow
        )
    assert lookups == ["api.example.com"] and time.monotonic() - started < 2

    def failing(host: str, port: int) -> list[str]:
        raise outbound.RequestFailed(f"cannot resolve {host!r}: no such name")

    with pytest.raises(outbound.RequestFailed, match=r"cannot resolve 'api\.example\.com': no such name"):
        outbound.send(
            policy,
            "GET",
            "https://api.example.com/",
            {},
            body=None,
            timeout=1,
            max_bytes=10,
            resolver=failing,
        )


def test_an_answer_with_numbers_json_has_not_fails_naming_the_number(
    monkeypatch: pytest.MonkeyPatch, server: Server
) -> None:
    """Python's json reads NaN, Infinity and -Infinity, and 1e999 as inf; JSON has no such numbers and the
    probe found them in context data and step results."""
    allow(monkeypatch, [f"127.0.0.1:{server.port}"], ["127.0.0.0/8"])

    def answering(body: str) -> dict[str, Any]:
        return {"url": f"{server.url}/raw?{urlencode({'body': body})}"}

    assert call(answering("[1.7e308, -1e-400, 1e2, 12]"))["body"] == [1.7e308, -0.0, 100.0, 12]
    assert call(answering("nan"))["body"] == "nan"  # not JSON at all: the text, as before
    for answer, named in [
        ('{"big":1e999,"nan":NaN}', "1e999"),
        ('{"nan":NaN}', "NaN"),
        ("[Infinity]", "Infinity"),
        ('{"a":{"b":[1,-Infinity]}}', "-Infinity"),
        ("-1e400", "-1e400"),
        ("[0.5, 1E+309]", "1E+309"),
    ]:
        refused(answering(answer), f"the answer's JSON holds {named}, and JSON numbers must be finite")


def test_request_inputs_are_checked(monkeypatch: pytest.MonkeyPatch, server: Server) -> None:
    allow(monkeypatch, [f"127.0.0.1:{server.port}"], ["127.0.0.0/8"])
    refused({"url": f"{server.url}/ok", "headers": {"Host": "internal"}}, "header 'Host' is not allowed")
    refused({"url": f"{server.url}/ok", "followRedirects": "yes"}, "followRedirects must be true or false")
    refused({"url": f"{server.url}/ok", "headers": {"X-A": "1\r\nX-Injected: 1"}}, "holds CR, LF or NUL")
    refused({"url": f"{server.url}/ok", "timeoutSeconds": 0}, "timeoutSeconds must be a number 0..300")
    refused({"url": ""}, "input 'url' must be a non-empty string")
    assert server.requests == []


SMUGGLED = "GET /admin HTTP/1.1\r\nHost: internal-admin.local\r\nContent-Length: 0\r\n\r\n"


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Length": "0"},
        {" content-length ": "0"},
        {"Transfer-Encoding": "chunked"},
        {"Connection": "keep-alive"},
        {"TE": "trailers"},
        {"Upgrade": "h2c"},
        {"Expect": "100-continue"},
        {"Keep-Alive": "timeout=5"},
        {"Proxy-Authorization": "Basic eA=="},
        {"Trailer": "X-A"},
        {"HOST": "internal-admin.local"},
        {"X-A\x00": "1"},
        {"X-A": "1\nGET /admin HTTP/1.1"},
        {"X A": "1"},
    ],
)
def test_headers_that_frame_the_message_are_refused_before_anything_is_sent(
    monkeypatch: pytest.MonkeyPatch, server: Server, headers: dict[str, str]
) -> None:
    """A Content-Length of 0 with a body holding a second request would reach a path the allowlist refuses."""
    allow(monkeypatch, [f"http://127.0.0.1:{server.port}/v1"], ["127.0.0.0/8"])
    name = next(iter(headers))
    message = refused(
        {"url": f"{server.url}/v1/orders", "method": "POST", "headers": headers, "body": SMUGGLED},
        f"header {name!r}",
        "not Host (it comes from the url), Content-Length, Transfer-Encoding",
    )
    assert "Proxy-*" in message
    assert server.requests == []


def test_http_client_frames_the_body_so_it_stays_one_request(
    monkeypatch: pytest.MonkeyPatch, server: Server
) -> None:
    allow(monkeypatch, [f"http://127.0.0.1:{server.port}/v1"], ["127.0.0.0/8"])
    answer = call({"url": f"{server.url}/v1/orders", "method": "POST", "body": SMUGGLED})
    assert answer["body"]["body"] == SMUGGLED
    time.sleep(0.2)  # a second request in the body would arrive now
    assert [path for _, path, _ in server.requests] == ["/v1/orders"]


def test_send_refuses_framing_headers_itself() -> None:
    policy = OutboundPolicy.parse(["api.example.com"], [])
    with pytest.raises(RequestRefused, match="header 'Transfer-Encoding' is not allowed"):
        outbound.send(
            policy,
            "POST",
            "https://api.example.com/",
            {"Transfer-Encoding": "chunked"},
            body=b"",
            timeout=1,
            max_bytes=1,
        )


def test_the_engine_reads_the_allowlist_the_module_accepts_and_refuses_what_it_refuses() -> None:
    """The module's validations (tests/terraform/validations.tftest.hcl) and the engine agree."""
    text = (Path(__file__).parents[1] / "terraform" / "validations.tftest.hcl").read_text()
    runs = dict(re.findall(r'run "(\w+)" \{(.*?)\n\}', text, re.DOTALL))
    accepted = json.loads(
        re.findall(r"http_allowlist\s+= (\[.*\])", runs["http_allowlist_every_form_reaches_the_worker"])[0]
    )
    networks = json.loads(
        re.findall(r"http_allowed_networks = (\[.*\])", runs["http_allowlist_every_form_reaches_the_worker"])[
            0
        ]
    )
    policy = OutboundPolicy.parse(accepted, networks)
    assert [rule.text for rule in policy.rules] == accepted
    refused_entries = [
        json.loads(re.findall(r"http_allowlist = (\[.*\])", body)[0])[0]
        for name, body in runs.items()
        if name.startswith("rejects_http_allowlist_")
    ]
    assert len(refused_entries) == 9
    for entry in refused_entries:
        with pytest.raises(RequestRefused, match="allowlist entry"):
            OutboundPolicy.parse([entry], [])
    with pytest.raises(RequestRefused, match="must be a CIDR block"):
        OutboundPolicy.parse(
            [], json.loads(re.findall(r"= (\[.*\])", runs["rejects_http_allowed_networks_not_cidr"])[0])
        )


_URL_PIECES = (
    st.sampled_from(["http://", "https://", "HTTP://", "//", "@", ":", "::", "[", "]", "%2e", "%", "..", "."])
    | st.sampled_from(["/", "\\", "?", "#", "*.", "0x7f", "127", "1", "0", "::ffff:", "api", "example.com"])
    | st.sampled_from(["-", "\u00e9", " ", "\r\n", "80", "99999"])
)
_URLS = st.one_of(st.text(max_size=60), st.lists(_URL_PIECES, max_size=14).map("".join))
_POLICY = OutboundPolicy.parse(["*.example.com", "https://api.example.com/v1", "[::1]:8080"], ["10.0.0.0/8"])


@settings(max_examples=600, deadline=200)
@given(_URLS)
def test_any_url_is_admitted_or_refused_with_the_documented_error(url: str) -> None:
    try:
        target = _POLICY.check_url(url)
    except RequestRefused as error:
        assert repr(url) in str(error)
        return
    assert target.scheme in ("http", "https") and target.host and "@" not in target.host
    assert target.host.endswith(".example.com") or target.host == "::1"


@settings(max_examples=600, deadline=200)
@given(_URLS)
def test_any_allowlist_entry_is_read_or_refused_with_the_documented_error(entry: str) -> None:
    try:
        OutboundPolicy.parse([entry], [])
    except RequestRefused as error:
        assert "allowlist entry" in str(error)


# --- in a definition ----------------------------------------------------------------------------------


def test_a_definition_gets_the_answer_or_fails_at_once_naming_the_rule(
    monkeypatch: pytest.MonkeyPatch, server: Server, harness: Harness
) -> None:
    allow(monkeypatch, [f"127.0.0.1:{server.port}", "169.254.169.254"], ["127.0.0.0/8"])
    attempts: list[str] = []

    def counted(inputs: dict[str, Any], ctx: ActionContext) -> Any:
        attempts.append(inputs["url"])
        return http_request(inputs, ctx)

    harness.actions.register(HTTP, counted)
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "go"},
                {
                    "id": "call",
                    "type": "action",
                    "action": HTTP,
                    "input": {"url": "data.url"},
                    "output": "answer",
                    "retry": {"maxAttempts": 3, "initialDelay": "1s"},
                },
                {"id": "e", "type": "end"},
            ],
            [("t", "call"), ("call", "e")],
        )
    )
    harness.send("go", "allowed", {"url": f"{server.url}/ok"})
    metadata = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
    harness.send("go", "metadata", {"url": metadata})
    harness.run_all()

    allowed = harness.context("wf", "allowed")
    assert allowed.status == "SUCCEEDED" and harness.status(allowed) == "SUCCEEDED"
    assert allowed.data["answer"]["status"] == 200 and allowed.data["answer"]["body"]["path"] == "/ok"
    failed = harness.context("wf", "metadata")
    assert failed.status == "FAILED" and harness.status(failed) == "FAILED"
    assert metadata in json.dumps(failed.error) and "169.254.169.254, a link-local" in json.dumps(
        failed.error
    )
    assert attempts == [f"{server.url}/ok", metadata]  # the refusal is not retried
    assert [path for _, path, _ in server.requests] == ["/ok"]


def test_a_hostile_answer_fails_its_context_and_nothing_of_it_is_stored(
    monkeypatch: pytest.MonkeyPatch, server: Server, harness: Harness
) -> None:
    """The probe found 6 MB of headers, and 1e999 and NaN, in context data and step results. 95 headers of
    1,000 bytes pass the head's 64 KiB; before the bound they were stored, as the numbers were."""
    allow(monkeypatch, [f"127.0.0.1:{server.port}"], ["127.0.0.0/8"])
    harness.actions.register(HTTP, http_request)
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "go"},
                {
                    "id": "call",
                    "type": "action",
                    "action": HTTP,
                    "input": {"url": "data.url", "maxResponseBytes": 100},
                    "output": "answer",
                    "retry": {"maxAttempts": 3, "initialDelay": "1s"},
                },
                {"id": "e", "type": "end"},
            ],
            [("t", "call"), ("call", "e")],
        )
    )
    nan = urlencode({"body": '{"big":1e999,"nan":NaN}'})
    harness.send("go", "headers", {"url": f"{server.url}/head?count=95&size=1000"})
    harness.send("go", "nan", {"url": f"{server.url}/raw?{nan}"})
    harness.run_all()

    for subject, named in (("headers", "larger than 65536 bytes"), ("nan", "holds 1e999")):
        failed = harness.context("wf", subject)
        assert failed.status == "FAILED" and harness.status(failed) == "FAILED"
        assert named in json.dumps(failed.error)
        assert "answer" not in failed.data
        history = harness.local.history(failed.execution_id)
        stored = json.dumps([failed.data, failed.error, history], allow_nan=False, default=str)
        assert len(stored) < 20_000 and "h" * 1000 not in stored
    assert len(server.requests) == 2  # a refused answer is not asked for again
