"""Requests that go out: an allowed request and the classes of its answer, the connection made to the
checked address (TLS verifying the URL's host there), and answers holding numbers JSON has not."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from stepwell.features.definitions import outbound
from stepwell.features.definitions.actions import ActionError, PermanentActionError
from stepwell.features.definitions.outbound import OutboundPolicy

from .support import Server, allow, call, refused, resolve_names


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
