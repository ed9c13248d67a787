"""Addresses: a non-public one, or a name resolving to one, is refused unless its network is allowed;
the classes of addresses; IPv6 ranges that are no host's own."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

import pytest
from stepwell.features.definitions import outbound
from stepwell.features.definitions.outbound import OutboundPolicy, RequestRefused, non_public_reason

from .support import Server, allow, refused, resolve_names


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
