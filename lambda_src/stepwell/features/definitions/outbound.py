"""Which URLs the `stepwell.http` action may reach, and the bounded request that reaches them.

Definitions are data a tenant writes, but the worker runs them with the network access of the operator's
account (and VPC): the instance metadata service, the Lambda runtime API on 127.0.0.1 and private
services are one URL away. So a request goes out only when:

1. its URL matches an entry of STEPWELL_HTTP_ALLOWLIST (the module's `http_allowlist`; empty: the action
   is disabled). An entry is a host (`api.example.com`, `api.example.com:8443`) or a subdomain wildcard
   (`*.example.com`, not the apex), both for http and https on the scheme's default port unless a port
   is given, or a URL prefix (`https://api.example.com/v1`: the same scheme, host and port, and the path
   `/v1` or below it). URLs with user info, dot segments, backslashes or non-canonical IPv4 spellings
   (`2130706433`, `0x7f.1`) are refused outright;
2. every address the host resolves to is public, or inside a network of STEPWELL_HTTP_ALLOWED_NETWORKS
   (the module's `http_allowed_networks`). Loopback, link-local, private, shared (CGNAT), multicast,
   unspecified, reserved and IPv4-translation (local-use NAT64, SIIT) addresses, and any other address
   Python's ipaddress does not call global, are refused, also when spelled as IPv4 inside IPv6;
3. the connection goes to the address that was checked (a rebinding DNS gets no second lookup), with
   the URL's host in the Host header and TLS server name;
4. a redirect is followed only to a URL that passes 1 and 2 again, never from https to http, for at
   most MAX_REDIRECTS hops; to another origin it carries only the headers of CROSS_ORIGIN_HEADERS
   (Accept, Accept-Language, Content-Type, User-Agent), none of those that may hold a secret;
5. the definition sets no header that frames the message or steers the connection (FRAMING_HEADERS, Host,
   Proxy-*) and none with CR, LF or NUL: http.client frames the body, so it cannot hold a second request;
6. the whole exchange, every lookup and redirect included, ends within the deadline and the body stays
   within the size limit; the answer's head (status line and headers, of 100 Continue answers too) stays
   within MAX_HEADER_BYTES and MAX_HEADER_FIELDS whatever the body's limit, counted as it is read.

`RequestRefused` (a rule said no: retrying cannot help) and `RequestFailed` (the network or the server
did not answer in time: a retry may) name the URL and the reason. Proxies are not used.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import io
import ipaddress
import json
import os
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast
from urllib.parse import SplitResult, unquote, urljoin, urlsplit

ALLOWLIST_ENV = "STEPWELL_HTTP_ALLOWLIST"
ALLOWED_NETWORKS_ENV = "STEPWELL_HTTP_ALLOWED_NETWORKS"
MAX_REDIRECTS = 5
DEFAULT_PORTS = {"http": 80, "https": 443}
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# The only headers a redirect carries to another origin: tenants put secrets in headers of any name
# (X-Api-Key, ...), so every other header stays with the origin the definition named.
CROSS_ORIGIN_HEADERS = frozenset({"accept", "accept-language", "content-type", "user-agent"})
_BODY_HEADERS = frozenset({"content-type", "content-length", "content-encoding"})
# Headers that frame the message or steer the connection: set by a definition, they let a body carry a
# second request past the allowlist (request smuggling). http.client frames the body; Host is the url's.
FRAMING_HEADERS = frozenset(
    {"content-length", "transfer-encoding", "connection", "te", "upgrade", "expect", "keep-alive", "trailer"}
)
HEADER_RULE = (
    "a definition may set end-to-end headers only: not Host (it comes from the url), Content-Length, "
    "Transfer-Encoding, Connection, TE, Upgrade, Expect, Keep-Alive, Trailer or any Proxy-* header; "
    "names are letters, digits and !#$%&'*+-.^_`|~, and no name or value holds CR, LF or NUL"
)
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+\-.^_`|~]+")
_READ_CHUNK = 65536
# The bound on an answer's head, which maxResponseBytes (the body's) does not cover: http.client alone
# reads 100 lines of 64 KiB each, 6.5 MB of headers handed back in the result. Mature clients cap the
# whole head (Node.js's maxHeaderSize: 16 KiB, curl: 300 KiB); 64 KiB holds any API's headers, cookies
# included. The field count is http.client's own (100 lines, the blank one that ends them included),
# checked first so the error names it. Every status line, header line and line end counts, 100 Continue
# heads included.
MAX_HEADER_BYTES = 64 * 1024
MAX_HEADER_FIELDS = 99
_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")  # fullmatch: "$" would let a trailing newline in

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Sequence[str]]

# Address ranges no request reaches unless the operator allows them by network, by the name the error
# gives. Anything else that is not globally routable is refused as "not globally routable".
_NON_PUBLIC: tuple[tuple[str, tuple[IPNetwork, ...]], ...] = tuple(
    (name, tuple(ipaddress.ip_network(cidr) for cidr in cidrs))
    for name, cidrs in (
        ("unspecified", ("0.0.0.0/8", "::/128")),
        ("loopback", ("127.0.0.0/8", "::1/128")),
        ("link-local", ("169.254.0.0/16", "fe80::/10")),
        ("private", ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "fec0::/10")),
        ("shared (CGNAT)", ("100.64.0.0/10",)),
        ("multicast", ("224.0.0.0/4", "ff00::/8")),
        # A translator may map these to any IPv4 address, private ones included; they are no host's own.
        ("IPv4 translation (local-use NAT64, SIIT)", ("64:ff9b:1::/48", "::ffff:0:0:0/96")),
        (
            "reserved",
            (
                "192.0.0.0/24",
                "192.0.2.0/24",
                "198.18.0.0/15",
                "198.51.100.0/24",
                "203.0.113.0/24",
                "240.0.0.0/4",
                "100::/64",
                "100:0:0:1::/64",  # dummy prefix (RFC 9780)
                "2001:db8::/32",
                "3fff::/20",  # documentation (RFC 9637)
                "5f00::/16",  # SRv6 segment identifiers (RFC 9602)
            ),
        ),
    )
)


class OutboundError(Exception):
    """A request of the `stepwell.http` action did not produce an answer."""


class RequestRefused(OutboundError):
    """A rule refused the request (or its answer): the same request would be refused again."""


class RequestFailed(OutboundError):
    """The network or the server failed (no connection, no answer within the deadline): may be retried."""


@dataclass(frozen=True, kw_only=True)
class Target:
    """A URL that passed the syntax rules: what to connect to and what to ask for."""

    url: str
    scheme: str
    host: str  # lower case; an IPv6 literal without brackets
    port: int
    path: str
    request_target: str  # path and query, as sent

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


@dataclass(frozen=True)
class AllowRule:
    """One entry of the allowlist."""

    text: str
    host: str
    wildcard: bool = False
    scheme: str | None = None  # None: http or https
    port: int | None = None  # None: the scheme's default port
    path_prefix: str | None = None

    def matches(self, target: Target) -> bool:
        if self.scheme is not None and target.scheme != self.scheme:
            return False
        if target.port != (self.port if self.port is not None else DEFAULT_PORTS[target.scheme]):
            return False
        if self.wildcard:
            if not target.host.endswith("." + self.host):
                return False
        elif target.host != self.host:
            return False
        prefix = self.path_prefix
        if prefix is None or target.path == prefix:
            return True
        return target.path.startswith(prefix if prefix.endswith("/") else prefix + "/")


def non_public_reason(address: IPAddress) -> str | None:
    """Why an address is not a public internet address (None: it is one)."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        reason = non_public_reason(embedded)
        return None if reason is None else f"{reason} (as IPv6 {address})"
    for name, networks in _NON_PUBLIC:
        if any(address in network for network in networks):
            return name
    return None if address.is_global else "not globally routable"


def header_problem(name: str, value: str) -> str | None:
    """Why a definition may not send this header (None: it may)."""
    if any(ch in text for text in (name, value) for ch in "\r\n\x00"):
        return f"header {name!r}: {value!r} holds CR, LF or NUL"
    folded = name.strip().lower()
    if folded in FRAMING_HEADERS or folded == "host" or folded.startswith("proxy-"):
        return f"header {name!r} is not allowed"
    if not _HEADER_NAME.fullmatch(name):
        return f"header {name!r}: the name is not a token"
    return None


def check_headers(headers: Mapping[str, str]) -> None:
    """RequestRefused naming the first header a definition may not send, and the rule."""
    for name, value in headers.items():
        problem = header_problem(name, value)
        if problem:
            raise RequestRefused(f"{problem}: {HEADER_RULE}")


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, compatible, NAT64, 6to4, Teredo), if any."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    value = int(address)
    if value >> 32 == 0 and value > 1:  # ::a.b.c.d (deprecated IPv4-compatible); ::, ::1 are themselves
        return ipaddress.IPv4Address(value)
    if value >> 32 == int(ipaddress.IPv6Address("64:ff9b::")) >> 32:  # NAT64 well-known prefix
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


def parse_url(url: str) -> Target:
    """Check a URL's syntax against the rules that hold whatever the allowlist says."""
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F or ch == "\\" for ch in url):
        raise RequestRefused(f"{url!r}: a URL may not hold whitespace, control characters or backslashes")
    if not url.isascii():
        raise RequestRefused(
            f"{url!r}: a URL must be ASCII (percent-encode the path, give the host's xn-- form)"
        )
    parts = _split(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise RequestRefused(f"{url!r}: the scheme must be http or https, got {parts.scheme or 'none'!r}")
    host, port = _host_and_port(parts, url)
    path = parts.path or "/"
    segments = re.split(r"[/\\]", unquote(path))
    if any(segment in (".", "..") for segment in segments):
        raise RequestRefused(f"{url!r}: the path may not hold dot segments ('.' or '..', also encoded)")
    request_target = path + (f"?{parts.query}" if parts.query else "")
    return Target(
        url=url,
        scheme=scheme,
        host=host,
        port=port or DEFAULT_PORTS[scheme],
        path=path,
        request_target=request_target,
    )


def _split(text: str) -> SplitResult:
    try:
        return urlsplit(text)
    except ValueError as error:  # e.g. unbalanced brackets of an IPv6 host
        raise RequestRefused(f"{text!r}: not a URL: {error}") from None


def _host_and_port(parts: SplitResult, text: str) -> tuple[str, int | None]:
    if "@" in parts.netloc:
        raise RequestRefused(f"{text!r}: user info (user:password@) is not allowed")
    host = parts.hostname
    if not host:
        raise RequestRefused(f"{text!r}: no host")
    try:
        port = parts.port
    except ValueError:
        raise RequestRefused(f"{text!r}: the port must be a number 1..65535") from None
    if port is not None and not 1 <= port <= 65535:
        raise RequestRefused(f"{text!r}: the port must be a number 1..65535, got {port}")
    reason = _host_problem(host)
    if reason:
        raise RequestRefused(f"{text!r}: host {host!r} {reason}")
    return host.lower(), port


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _host_problem(host: str) -> str | None:
    if _is_ip(host):
        return None
    if not host.isascii():
        return "is not ASCII (give its xn-- form)"
    labels = host.lower().split(".")
    if not all(_LABEL.fullmatch(label) for label in labels) or len(host) > 253:
        return "is not a DNS name (letters, digits and hyphens in dot-separated labels)"
    if labels[-1].isdigit() or _is_inet_aton_spelling(host):
        return "is not a canonical IPv4 address (write it as four decimal numbers, e.g. 192.0.2.1)"
    return None


def _is_inet_aton_spelling(host: str) -> bool:
    # The C resolver reads 0x7f.1, 017700000001 or 127.1 as an address: refuse what is not dotted decimal.
    try:
        socket.inet_aton(host)
    except OSError:
        return False
    return True


def parse_allow_rule(text: str) -> AllowRule:
    """An allowlist entry: `host[:port]`, `*.domain[:port]` or a URL prefix `http(s)://host[:port]/path`."""
    try:
        return _read_allow_rule(text)
    except RequestRefused as error:
        raise RequestRefused(f"allowlist entry {error}") from None


def _read_allow_rule(text: str) -> AllowRule:
    if not isinstance(text, str) or not text or text != text.strip():
        raise RequestRefused(f"{text!r}: must be a non-empty string without surrounding spaces")
    if "://" in text:
        target = parse_url(text)
        if not _split(text).path.startswith("/") or "?" in text or "#" in text:
            raise RequestRefused(f"{text!r}: a URL prefix is http(s)://host[:port]/path, without query")
        return AllowRule(text, target.host, scheme=target.scheme, port=target.port, path_prefix=target.path)
    wildcard = text.startswith("*.")
    try:
        parts = urlsplit("//" + (text[2:] if wildcard else text))
    except ValueError:
        parts = None
    if parts is None or parts.path or parts.query or parts.fragment or "*" in parts.netloc:
        raise RequestRefused(
            f"{text!r}: a host entry is host[:port] or *.domain[:port]; give a path as a URL prefix "
            "(https://host/path)"
        )
    host, port = _host_and_port(parts, text)
    if wildcard and _is_ip(host):
        raise RequestRefused(f"{text!r}: a wildcard needs a domain, not an address")
    return AllowRule(text, host, wildcard=wildcard, port=port)


@dataclass(frozen=True)
class OutboundPolicy:
    """The allowlist and the non-public networks the operator opened."""

    rules: tuple[AllowRule, ...] = ()
    allowed_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, allowlist: Sequence[str], allowed_networks: Sequence[str]) -> OutboundPolicy:
        networks: list[IPNetwork] = []
        for cidr in allowed_networks:
            try:
                if "/" not in cidr:  # a bare address is more likely a mistake than a network of one
                    raise ValueError(cidr)
                networks.append(ipaddress.ip_network(cidr, strict=False))
            except (TypeError, ValueError):
                raise RequestRefused(
                    f"allowed network {cidr!r}: must be a CIDR block such as 10.0.0.0/8 or fd00::/8"
                ) from None
        return cls(tuple(parse_allow_rule(entry) for entry in allowlist), tuple(networks))

    def check_url(self, url: str) -> Target:
        """The URL's target when the syntax rules and the allowlist admit it."""
        if not self.rules:
            raise RequestRefused(
                f"{url!r}: outbound HTTP is disabled: the allowlist is empty "
                f"(the module's http_allowlist, {ALLOWLIST_ENV})"
            )
        target = parse_url(url)
        if not any(rule.matches(target) for rule in self.rules):
            raise RequestRefused(
                f"{url!r}: {target.scheme}://{_netloc(target.host, target.port)}{target.path} "
                "matches no entry of the allowlist (the module's http_allowlist)"
            )
        return target

    def check_addresses(self, target: Target, addresses: Sequence[str]) -> list[IPAddress]:
        """The addresses to connect to; refused when any is non-public and not in an allowed network."""
        if not addresses:
            raise RequestFailed(f"{target.url!r}: {target.host} resolves to no address")
        checked: list[IPAddress] = []
        for text in addresses:
            address = _unmapped(ipaddress.ip_address(text.split("%", 1)[0]))
            reason = non_public_reason(address)
            if reason and not any(address in network for network in self.allowed_networks):
                raise RequestRefused(
                    f"{target.url!r}: {target.host} resolves to {address}, a {reason} address "
                    "(allowed only inside the module's http_allowed_networks)"
                )
            checked.append(address)
        return checked


def _unmapped(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def policy_from_env(environ: Mapping[str, str] | None = None) -> OutboundPolicy:
    env = os.environ if environ is None else environ
    return _policy_from_text(env.get(ALLOWLIST_ENV, ""), env.get(ALLOWED_NETWORKS_ENV, ""))


@functools.lru_cache(maxsize=4)
def _policy_from_text(allowlist: str, allowed_networks: str) -> OutboundPolicy:
    return OutboundPolicy.parse(
        _string_list(ALLOWLIST_ENV, allowlist), _string_list(ALLOWED_NETWORKS_ENV, allowed_networks)
    )


def _string_list(name: str, text: str) -> list[str]:
    if not text.strip():
        return []
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RequestRefused(f"{name} must be a JSON list of strings, got {text!r}")
    return value


def system_resolver(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise RequestFailed(f"cannot resolve {host!r}: {error}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True, kw_only=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes
    url: str
    location: str | None = None


def send(
    policy: OutboundPolicy,
    method: str,
    url: str,
    headers: Mapping[str, str],
    *,
    body: bytes | None,
    timeout: float,
    max_bytes: int,
    follow_redirects: bool = True,
    resolver: Resolver = system_resolver,
    tls: ssl.SSLContext | None = None,
) -> Response:
    """Send a request the policy admits, following admitted redirects, within `timeout` seconds in all."""
    deadline = time.monotonic() + timeout
    check_headers(headers)
    target = policy.check_url(url)
    request_headers = dict(headers)
    hops = 0
    redirected_from: str | None = None
    while True:
        try:
            response = _exchange(
                policy,
                target,
                method,
                headers=request_headers,
                body=body,
                deadline=deadline,
                timeout=timeout,
                max_bytes=max_bytes,
                resolver=resolver,
                tls=tls,
            )
        except RequestRefused as error:
            if redirected_from is None:
                raise
            raise RequestRefused(f"redirect from {redirected_from!r} refused: {error}") from None
        if not follow_redirects or response.status not in REDIRECT_STATUSES or not response.location:
            return response
        if hops == MAX_REDIRECTS:
            raise RequestRefused(f"{url!r}: more than {MAX_REDIRECTS} redirects")
        hops += 1
        next_url = urljoin(target.url, response.location)
        try:
            next_target = policy.check_url(next_url)
        except RequestRefused as error:
            raise RequestRefused(f"redirect from {target.url!r} refused: {error}") from None
        if target.scheme == "https" and next_target.scheme == "http":
            raise RequestRefused(f"redirect from {target.url!r} to {next_url!r} refused: https to http")
        if response.status == 303 or (response.status in (301, 302) and method == "POST"):
            method, body = "GET", None
            request_headers = {k: v for k, v in request_headers.items() if k.lower() not in _BODY_HEADERS}
        if next_target.origin != target.origin:
            request_headers = {
                k: v for k, v in request_headers.items() if k.strip().lower() in CROSS_ORIGIN_HEADERS
            }
        redirected_from, target = target.url, next_target


class _HeadTooLarge(Exception):
    """An answer's head passed MAX_HEADER_BYTES or MAX_HEADER_FIELDS (the message names which)."""


class _HeadBudget:
    """The reader an answer's head is read from: http.client's begin() reads it line by line, and each
    line is refused as it arrives once the head passes its limits (never buffered whole first)."""

    def __init__(self, reader: io.BufferedReader) -> None:
        self._reader = reader
        self._size = 0
        self._fields = 0
        self._status_next = True  # the first line, and the one after a 100 Continue head, is a status line

    def readline(self, limit: int = -1) -> bytes:
        left = MAX_HEADER_BYTES - self._size
        line = self._reader.readline(left + 1 if limit < 0 else min(limit, left + 1))
        self._size += len(line)
        if self._size > MAX_HEADER_BYTES:
            raise _HeadTooLarge(
                f"the response's status line and headers are larger than {MAX_HEADER_BYTES} bytes (the "
                "limit on an answer's head, whatever maxResponseBytes says): "
                f"{self._size} bytes read before their end"
            )
        if self._status_next:
            self._status_next = False
        elif line in (b"\r\n", b"\n", b""):
            self._status_next = True
        else:
            self._fields += 1
            if self._fields > MAX_HEADER_FIELDS:
                raise _HeadTooLarge(
                    f"the response has more than {MAX_HEADER_FIELDS} header lines (the limit on an answer's "
                    f"head): line {self._fields} arrived after {self._size - len(line)} bytes"
                )
        return line


class _BoundedResponse(http.client.HTTPResponse):
    """An HTTPResponse whose head is read within MAX_HEADER_BYTES and MAX_HEADER_FIELDS."""

    def begin(self) -> None:
        reader = self.fp
        # begin() reads the head with readline() alone; the body is read from the reader itself.
        self.fp = cast(io.BufferedReader, _HeadBudget(reader))
        try:
            super().begin()
        finally:
            self.fp = reader


class _Watchdog:
    """Shuts the connection's socket when the deadline passes, whatever the socket is blocked in."""

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self.sock = sock
        self.fired = threading.Event()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired.set()
        # The plain socket's shutdown (not SSLSocket's, which talks TLS first) wakes a blocked read.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()


def _exchange(
    policy: OutboundPolicy,
    target: Target,
    method: str,
    *,
    headers: Mapping[str, str],
    body: bytes | None,
    deadline: float,
    timeout: float,
    max_bytes: int,
    resolver: Resolver,
    tls: ssl.SSLContext | None,
) -> Response:
    addresses = policy.check_addresses(
        target, _resolve_in_time(resolver, target, method, deadline=deadline, timeout=timeout)
    )
    sock = _connect(target, addresses, deadline, timeout)
    watchdog = _Watchdog(sock, deadline - time.monotonic())
    connection: http.client.HTTPConnection | None = None
    try:
        if target.scheme == "https":
            context = tls or ssl.create_default_context()
            sock = context.wrap_socket(sock, server_hostname=target.host)
            watchdog.sock = sock
            connection = http.client.HTTPSConnection(target.host, target.port, context=context)
        else:
            connection = http.client.HTTPConnection(target.host, target.port)
        connection.response_class = _BoundedResponse
        connection.sock = sock  # already connected to the checked address: no lookup of its own
        try:
            connection.request(method, target.request_target, body=body, headers=dict(headers))
        except ValueError as error:  # http.client refuses a header name or value (line breaks, non-Latin-1)
            raise RequestRefused(f"{target.url!r}: bad request header: {error}") from None
        try:
            answer = connection.getresponse()
        except _HeadTooLarge as error:
            raise RequestRefused(f"{target.url!r}: {error}") from None
        declared = answer.getheader("Content-Length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise RequestRefused(_too_large(target, max_bytes, f"announces {declared} bytes"))
        data = _read_bounded(answer, target, max_bytes)
        if watchdog.fired.is_set():  # the shut socket may read as a clean end of a body without length
            raise OSError("deadline passed")
        location = answer.getheader("Location")
        return Response(
            status=answer.status,
            headers=dict(answer.getheaders()),
            body=data,
            url=target.url,
            location=location,
        )
    except (OSError, http.client.HTTPException) as error:
        # The socket's own timeout (the time left at connect) and the watchdog both end at the deadline:
        # whichever trips first, the answer is the same.
        if watchdog.fired.is_set() or isinstance(error, TimeoutError) or time.monotonic() >= deadline:
            raise RequestFailed(f"{method} {target.url}: no complete answer within {timeout:g} s") from None
        raise RequestFailed(f"{method} {target.url}: {type(error).__name__}: {error}") from None
    finally:
        watchdog.cancel()
        if connection is not None:
            connection.close()
        sock.close()


def _resolve_in_time(
    resolver: Resolver, target: Target, method: str, *, deadline: float, timeout: float
) -> Sequence[str]:
    """The resolver's answer within the deadline. getaddrinfo takes no timeout, so it runs on a thread of
    its own; one that is late is left to finish (daemon) and its answer is dropped."""
    late = RequestFailed(
        f"{method} {target.url}: no complete answer within {timeout:g} s (resolving {target.host})"
    )
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise late
    answers: list[Sequence[str]] = []
    errors: list[BaseException] = []

    def resolve() -> None:
        try:
            answers.append(resolver(target.host, target.port))
        except BaseException as error:  # handed to the caller's thread
            errors.append(error)

    worker = threading.Thread(target=resolve, name=f"resolve {target.host}", daemon=True)
    worker.start()
    worker.join(remaining)
    if worker.is_alive():
        raise late
    if errors:
        raise errors[0]
    return answers[0]


def _connect(
    target: Target, addresses: Sequence[IPAddress], deadline: float, timeout: float
) -> socket.socket:
    error: OSError | None = None
    for address in addresses:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            return socket.create_connection((str(address), target.port), timeout=remaining)
        except OSError as failure:
            error = failure
    reason = error or f"no connection within {timeout:g} s"
    raise RequestFailed(f"{target.url}: cannot connect to {target.host}: {reason}")


def _read_bounded(answer: http.client.HTTPResponse, target: Target, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := answer.read(min(_READ_CHUNK, max_bytes - size + 1)):
        size += len(chunk)
        if size > max_bytes:
            raise RequestRefused(_too_large(target, max_bytes, "sent more"))
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(target: Target, max_bytes: int, what: str) -> str:
    return f"{target.url!r}: the response body is larger than {max_bytes} bytes (maxResponseBytes): it {what}"
