"""Redirects: followed only where the allowlist allows, with only the safe headers to another origin,
never from https to http."""

from __future__ import annotations

from typing import Any

import pytest
from stepwell.features.definitions import outbound
from stepwell.features.definitions.outbound import OutboundPolicy, RequestRefused

from .support import Server, allow, call, refused, resolve_names


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
