"""A request's inputs are checked before anything is sent: headers that frame the message (a smuggled
second request) are refused, and the body is framed so that it stays one request."""

from __future__ import annotations

import time

import pytest
from stepwell.features.definitions import outbound
from stepwell.features.definitions.outbound import OutboundPolicy, RequestRefused

from .support import Server, allow, call, refused


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
