"""The allowlist: the URLs it admits, the entries and settings it refuses (naming them), URL tricks
refused before any lookup, and the same answers as the module's own validation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stepwell.features.definitions import outbound
from stepwell.features.definitions.outbound import OutboundPolicy, RequestRefused

from .support import Server, allow, call, refused, resolve_names


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


def test_the_engine_reads_the_allowlist_the_module_accepts_and_refuses_what_it_refuses() -> None:
    """The module's validations (tests/terraform/validations.tftest.hcl) and the engine agree."""
    text = (Path(__file__).parents[2] / "terraform" / "validations.tftest.hcl").read_text()
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
