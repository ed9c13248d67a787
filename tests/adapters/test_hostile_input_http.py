"""Hostile HTTP requests: the callback URL handler and the console answer 400 with the reason, never 500."""

from __future__ import annotations

import base64
import json

import pytest
from stepwell.client import StepwellClient
from stepwell.console.app import create_app, token_cookie_name
from stepwell.features.callback_urls import CallbackUrlHandler
from stepwell.testing.local import LocalStepwell

from .deployment import Deployment

CSRF = "test-token-0123456789"
ACCESS_TOKEN = "test-access-token-0123456789"


@pytest.mark.parametrize(
    ("outcome", "body"),
    [("success", "[" * 30_000), ("failure", '{"a":' * 12_000), ("success", "[" * 3000 + "]" * 3000)],
)
def test_a_callback_url_body_nested_too_deeply_is_a_400(outcome: str, body: str) -> None:
    handler = CallbackUrlHandler(LocalStepwell().engine)
    path = f"/callbacks/cbUnknown123/{outcome}"
    answer = handler.handle(
        {"rawPath": path, "requestContext": {"http": {"method": "POST", "path": path}}, "body": body}
    )
    assert answer["statusCode"] == 400
    assert json.loads(answer["body"]) == {"error": "the body's JSON is nested too deeply"}


@pytest.fixture
def console_client(deployment: Deployment) -> StepwellClient:
    return StepwellClient(deployment.config, deployment.clients)


def test_the_console_answers_a_bad_execution_id_with_400(console_client: StepwellClient) -> None:
    http = create_app(console_client, access_token=ACCESS_TOKEN, csrf_token=CSRF).test_client()
    http.set_cookie(token_cookie_name("80"), ACCESS_TOKEN)

    page = http.get("/execution?id=garbage")
    assert page.status_code == 400
    assert "not an execution id: &#39;garbage&#39;" in page.get_data(as_text=True)

    api = http.get("/api/execution?id=garbage")
    assert api.status_code == 400
    assert api.get_json() == {
        "error": "not an execution id: 'garbage'; expected 'domain#workflowId#subjectId/instanceId'"
    }


def test_the_console_answers_data_nested_too_deeply_with_400(
    console_client: StepwellClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    http = create_app(console_client, access_token=ACCESS_TOKEN, csrf_token=CSRF).test_client()
    http.set_cookie(token_cookie_name("80"), ACCESS_TOKEN)
    deep = base64.urlsafe_b64encode(b"[" * 100_000).decode()
    listing = http.get(f"/api/executions?domain=default&next_token={deep}")
    assert listing.status_code == 400 and "is not one this store returned" in listing.get_json()["error"]

    def nested(execution_id: str) -> dict[str, object]:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(console_client, "describe_execution", nested)
    api = http.get("/api/execution?id=d%23w%23s/i")
    assert api.status_code == 400
    assert api.get_json() == {"error": "the request's data is nested too deeply"}
    page = http.get("/execution?id=d%23w%23s/i")
    assert page.status_code == 400 and "nested too deeply" in page.get_data(as_text=True)
