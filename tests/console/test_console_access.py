"""The console's access token: no page, API or button without it (in the start URL's query, then in the
HttpOnly cookie it sets), and the Host check that also serves ::1."""

from __future__ import annotations

import io
import socket
import urllib.error
import urllib.request
from urllib.parse import parse_qs, urlsplit

import pytest
from stepwell.console import server
from stepwell.console.app import LOOPBACK_HOSTS, host_allowed, token_cookie_name
from werkzeug.serving import BaseWSGIServer

from .conftest import ACCESS_TOKEN, CSRF, Console

COOKIE = token_cookie_name("80")


def _text(response: object) -> str:
    return response.get_data(as_text=True)  # type: ignore[attr-defined]


def test_without_the_token_every_request_is_refused_with_one_line(console: Console) -> None:
    fresh = console.app.test_client()
    for path in ("/", "/executions", "/api/executions", "/execution?id=d%23w%23s/i", "/static/console.js"):
        refused = fresh.get(path)
        assert refused.status_code == 403, path
        assert _text(refused) == (
            "this console needs its token: open the URL `stepwell console` printed (.../?token=...)\n"
        )
        assert CSRF not in _text(refused) and "Set-Cookie" not in refused.headers
    posted = fresh.post("/dlq/redrive", data={"csrf_token": CSRF})  # even with the page's CSRF token
    assert posted.status_code == 403


def test_a_wrong_token_is_refused_and_sets_no_cookie(console: Console) -> None:
    fresh = console.app.test_client()
    for wrong in ("guess", ACCESS_TOKEN[:-1], ACCESS_TOKEN + "x", "", "ünïcode"):
        refused = fresh.get("/executions", query_string={"token": wrong})
        assert refused.status_code == 403, wrong
        assert _text(refused).startswith("wrong console token") and _text(refused).count("\n") == 1
        assert "Set-Cookie" not in refused.headers
    assert fresh.get("/executions").status_code == 403  # and nothing was remembered
    cookie_wrong = console.app.test_client()
    cookie_wrong.set_cookie(COOKIE, "guess")
    assert cookie_wrong.get("/executions").status_code == 403


def test_the_right_token_opens_the_console_and_its_cookie_keeps_it_open(console: Console) -> None:
    browser = console.app.test_client()
    opened = browser.get("/executions", query_string={"token": ACCESS_TOKEN})
    assert opened.status_code == 200 and "Executions" in _text(opened)
    cookie = opened.headers["Set-Cookie"]
    assert cookie.startswith(f"{COOKIE}={ACCESS_TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie

    # The cookie alone: the pages' links, the script's polling, the static files and the buttons.
    assert browser.get("/executions?status=SUCCEEDED").status_code == 200
    assert browser.get("/api/executions").status_code == 200
    assert browser.get("/static/console.js").status_code == 200
    assert browser.post("/dlq/redrive", data={"csrf_token": CSRF}).status_code == 302
    # A wrong token in the query is refused even beside a good cookie.
    assert browser.get("/executions", query_string={"token": "guess"}).status_code == 403


def test_a_cookie_is_per_port() -> None:
    assert token_cookie_name("8080") != token_cookie_name("8081")


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1", True),
        ("127.0.0.1:8080", True),
        ("localhost:8080", True),
        ("LOCALHOST", True),
        ("[::1]:8080", True),
        ("[::1]", True),
        ("[0:0:0:0:0:0:0:1]:8080", True),
        ("[::2]:8080", False),
        ("::1", False),  # an IPv6 address is bracketed in a Host header
        ("[::1", False),
        ("[::1]8080", False),
        ("127.0.0.1:port", False),
        ("attacker.example:8080", False),
        ("127.0.0.1.attacker.example", False),
        ("", False),
    ],
)
def test_the_host_check_knows_ipv6_names(host: str, allowed: bool) -> None:
    assert host_allowed(host, LOOPBACK_HOSTS) is allowed


def test_the_host_check_takes_the_served_address_and_any_name_when_remote() -> None:
    assert host_allowed("[::1]:8080", ("::1",)) and host_allowed(
        "192.0.2.7:80", (*LOOPBACK_HOSTS, "192.0.2.7")
    )
    assert host_allowed("console.example:8080", None) and not host_allowed("[::1", None)


def _ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_a_console_on_ipv6_loopback_answers(console: Console) -> None:
    with server.running_console(console.client, host="::1", access_token=ACCESS_TOKEN) as url:
        parts = urlsplit(url)
        assert parts.hostname == "::1" and parse_qs(parts.query) == {"token": [ACCESS_TOKEN]}
        base = f"{parts.scheme}://{parts.netloc}"
        opened = urllib.request.urlopen(f"{base}/executions?token={ACCESS_TOKEN}", timeout=30)
        assert opened.status == 200
        cookie = opened.headers["Set-Cookie"].split(";")[0]
        assert cookie == f"{token_cookie_name(str(parts.port))}={ACCESS_TOKEN}"
        again = urllib.request.Request(f"{base}/api/executions", headers={"Cookie": cookie})
        assert urllib.request.urlopen(again, timeout=30).status == 200
        with pytest.raises(urllib.error.HTTPError) as no_token:
            urllib.request.urlopen(f"{base}/executions", timeout=30)
        assert no_token.value.code == 403
        rebound = urllib.request.Request(
            f"{base}/executions", headers={"Cookie": cookie, "Host": "evil.example"}
        )
        with pytest.raises(urllib.error.HTTPError) as other_host:
            urllib.request.urlopen(rebound, timeout=30)
        assert other_host.value.code == 400


def test_serve_prints_the_url_with_the_token(console: Console, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(self: BaseWSGIServer, poll_interval: float = 0.5) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(BaseWSGIServer, "serve_forever", interrupted)
    monkeypatch.delenv(server.TOKEN_VARIABLE, raising=False)
    out = io.StringIO()
    server.serve(console.client, out, port=0)
    printed = parse_qs(urlsplit(out.getvalue().split(" on ")[1].split()[0]).query)["token"][0]
    assert len(printed) >= 40  # 32 random bytes

    out = io.StringIO()
    server.serve(console.client, out, port=0)
    assert f"?token={printed}" not in out.getvalue()  # a fresh token per start

    monkeypatch.setenv(server.TOKEN_VARIABLE, ACCESS_TOKEN)
    out = io.StringIO()
    server.serve(console.client, out, port=0)
    assert f"/?token={ACCESS_TOKEN} (Ctrl-C stops it)" in out.getvalue()


@pytest.mark.parametrize(
    ("chosen", "detail"),
    [("short", "it has 5 characters"), ("a token with spaces in it", "it holds ' '"), ("x" * 257, "257")],
)
def test_a_chosen_token_must_be_long_and_url_safe(chosen: str, detail: str) -> None:
    with pytest.raises(ValueError, match="16 to 256 characters of A-Z a-z 0-9") as refused:
        server.access_token_from({server.TOKEN_VARIABLE: chosen})
    assert detail in str(refused.value) and chosen not in str(refused.value)


def test_the_browser_helpers_open_pages_with_the_token() -> None:
    """The browser test and `make screenshot` open an execution's page in a fresh browser (no cookie)."""
    from stepwell.testing.console_browser import execution_url

    url = execution_url(f"http://127.0.0.1:5000/?token={ACCESS_TOKEN}", "default#w#s/i")
    assert url == f"http://127.0.0.1:5000/execution?id=default%23w%23s%2Fi&token={ACCESS_TOKEN}"
