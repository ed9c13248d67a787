"""Bounds: an answer's size and head, and the time of the whole exchange, name resolution included, cut
to what the invocation has left."""

from __future__ import annotations

import dataclasses
import time

import pytest
from stepwell.features.definitions import outbound
from stepwell.features.definitions.actions import (
    ActionContext,
    ActionError,
    PermanentActionError,
    http_request,
)
from stepwell.features.definitions.outbound import OutboundPolicy

from ..test_actions import context
from .support import Server, allow, call, refused


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
