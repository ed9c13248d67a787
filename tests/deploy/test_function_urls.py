"""Function URLs on both backends: a function with an AuthType NONE URL, reached over HTTP without AWS
credentials through ``stepwell.testing.function_urls`` (the harness runtime serves it on moto, LocalStack
serves it itself). The function sees a payload format 2.0 event and its answer becomes the response."""

from __future__ import annotations

import base64
import io
import json
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stepwell.testing.backends import Backend, start_backend
from stepwell.testing.function_urls import FunctionUrls
from stepwell.testing.lambda_runtime import LambdaRuntime

URL_HANDLER = """
import json

def handler(event, context):
    if event.get("rawPath") == "/raise":
        raise ValueError("the handler failed")
    if event.get("rawPath") == "/plain":
        return {"plain": True}
    if event.get("rawPath") == "/cookies":
        headers = {"Content-Type": "text/plain"}
        return {"statusCode": 200, "cookies": ["a=1", "b=2"], "headers": headers, "body": "c"}
    return {
        "statusCode": 201,
        "headers": {"Content-Type": "application/json", "X-Answer": "yes"},
        "body": json.dumps({"event": event, "function": context.function_name}),
    }
"""


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


class UrlFunction:
    """A function with a function URL (AuthType NONE) on the backend."""

    def __init__(self, backend: Backend, auth_type: str = "NONE") -> None:
        suffix = uuid.uuid4().hex[:8]
        self.name = f"url-fn-{suffix}"
        self.lam = backend.client("lambda")
        role = backend.client("iam").create_role(RoleName=f"url-role-{suffix}", AssumeRolePolicyDocument="{}")
        self.lam.create_function(
            FunctionName=self.name,
            Runtime="python3.13",
            Role=role["Role"]["Arn"],
            Handler="app.handler",
            Code={"ZipFile": _zip({"app.py": URL_HANDLER})},
            Timeout=30,
        )
        self.lam.get_waiter("function_active_v2").wait(FunctionName=self.name)
        self.url = str(
            self.lam.create_function_url_config(FunctionName=self.name, AuthType=auth_type)["FunctionUrl"]
        )

    def close(self) -> None:
        self.lam.delete_function_url_config(FunctionName=self.name)
        self.lam.delete_function(FunctionName=self.name)


@pytest.fixture()
def urls(stepwell_backend: Backend, tmp_path: Path) -> Iterator[tuple[UrlFunction, FunctionUrls]]:
    function = UrlFunction(stepwell_backend)
    runtime = None
    if not stepwell_backend.runs_lambda_code:
        runtime = LambdaRuntime(
            stepwell_backend.client,
            stepwell_backend.lambda_code,
            stepwell_backend.environment(),
            tmp_path,
            region=stepwell_backend.region,
            function_names=[function.name],
        )
    try:
        yield function, FunctionUrls.for_backend(stepwell_backend, runtime)
    finally:
        if runtime is not None:
            runtime.close()
        function.close()


def _url(base: str, path: str) -> str:
    return base.rstrip("/") + path


def test_a_request_runs_the_function_on_a_payload_2_event_and_returns_its_answer(
    urls: tuple[UrlFunction, FunctionUrls],
) -> None:
    function, client = urls
    assert ".lambda-url." in function.url
    answer = client.post(
        _url(function.url, "/callbacks/abc/success?x=1&x=2"),
        b'{"ok": true}',
        {"Content-Type": "application/json", "X-Custom": "v", "Cookie": "a=1; b=2"},
    )
    assert answer.status == 201, answer.body
    assert answer.headers["x-answer"] == "yes"
    assert answer.headers["content-type"] == "application/json"
    seen: dict[str, Any] = answer.json()
    event = seen["event"]
    assert seen["function"] == function.name
    assert event["version"] == "2.0"
    assert event["rawPath"] == "/callbacks/abc/success"
    assert event["rawQueryString"] == "x=1&x=2"
    assert event["queryStringParameters"] == {"x": "1,2"}
    assert event["requestContext"]["http"]["method"] == "POST"
    assert event["requestContext"]["http"]["path"] == "/callbacks/abc/success"
    assert event["requestContext"]["accountId"] == "anonymous"
    assert event["headers"]["x-custom"] == "v"
    assert event["headers"]["host"] == client.reachable(function.url).host
    assert event["isBase64Encoded"] is False
    assert event["body"] == '{"ok": true}'


def test_a_binary_body_arrives_base64_encoded_and_an_empty_one_not_at_all(
    urls: tuple[UrlFunction, FunctionUrls],
) -> None:
    function, client = urls
    binary = bytes(range(256))
    event = client.post(
        _url(function.url, "/bin"), binary, {"Content-Type": "application/octet-stream"}
    ).json()["event"]
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == binary
    empty = client.request("DELETE", _url(function.url, "/nothing")).json()["event"]
    assert "body" not in empty
    assert empty["requestContext"]["http"]["method"] == "DELETE"


def test_a_result_without_status_code_is_a_200_json_answer_and_an_error_a_502(
    urls: tuple[UrlFunction, FunctionUrls],
) -> None:
    function, client = urls
    plain = client.request("GET", _url(function.url, "/plain"))
    assert plain.status == 200
    assert plain.json() == {"plain": True}
    failed = client.request("GET", _url(function.url, "/raise"))
    assert failed.status == 502
    assert b"the handler failed" not in failed.body


def test_an_unknown_url_id_is_refused(urls: tuple[UrlFunction, FunctionUrls]) -> None:
    function, client = urls
    host = client.reachable(function.url).host
    unknown = function.url.replace(host.split(".", 1)[0], "0" * 32, 1)
    assert client.post(_url(unknown, "/x"), b"{}").status == 403


def test_reachable_refuses_what_is_not_a_function_url(urls: tuple[UrlFunction, FunctionUrls]) -> None:
    _, client = urls
    with pytest.raises(ValueError, match="not a function URL"):
        client.reachable("https://example.com/callbacks/x/success")
    reachable = client.reachable("https://abc123.lambda-url.us-east-1.on.aws/a/b?c=d")
    assert reachable.host == "abc123.lambda-url.us-east-1.on.aws"
    assert reachable.url == f"{client.gateway}/a/b?c=d"
    assert json.loads(json.dumps(reachable.__dict__)) == {"url": reachable.url, "host": reachable.host}


@pytest.fixture(scope="module")
def moto_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    with start_backend("moto", log_dir=str(tmp_path_factory.mktemp("moto-urls"))) as backend:
        yield backend


def test_the_local_runtime_refuses_aws_iam_urls_sets_cookies_and_forgets_deleted_urls(
    moto_backend: Backend, tmp_path: Path
) -> None:
    """moto: the runtime cannot check SigV4, so an AWS_IAM URL answers 403 (as an unsigned request does
    in Lambda) and the function never runs; cookies in a result are Set-Cookie headers; a deleted URL
    is unknown at once."""
    function = UrlFunction(moto_backend, auth_type="AWS_IAM")
    with LambdaRuntime(
        moto_backend.client, moto_backend.lambda_code, moto_backend.environment(), tmp_path
    ) as runtime:
        client = FunctionUrls.for_backend(moto_backend, runtime)
        refused = client.post(_url(function.url, "/x"), b"{}")
        assert refused.status == 403
        assert runtime.invocations == []
        moto_backend.client("lambda").update_function_url_config(FunctionName=function.name, AuthType="NONE")
        assert client.post(_url(function.url, "/x"), b"{}").status == 201
        # A result's cookies are Set-Cookie headers, as in Lambda (LocalStack drops them).
        cookies = client.request("GET", _url(function.url, "/cookies"))
        assert (cookies.status, cookies.body) == (200, b"c")
        assert cookies.headers["content-type"] == "text/plain"
        assert cookies.headers["set-cookie"] == "a=1, b=2"
        function.close()
        assert client.post(_url(function.url, "/x"), b"{}").status == 403
    with pytest.raises(ValueError, match="LambdaRuntime serves function URLs"):
        FunctionUrls.for_backend(moto_backend, None)
