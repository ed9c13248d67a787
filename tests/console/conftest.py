"""The console against one deployment in moto's in-process mock (the adapter tests' deployment), with
the worker played in-process by the adapter tests' queue driver."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from adapters.conftest import aws_credentials, deployment  # noqa: F401 - fixtures used by name
from adapters.deployment import Deployment
from adapters.driver import QueueDriver
from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, StepConfig
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy
from flask import Flask
from flask.testing import FlaskClient
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.console.app import create_app, token_cookie_name
from stepwell.core.registry import Registry
from stepwell.wiring.entry import EntryRuntime

CSRF = "test-token-0123456789"
ACCESS_TOKEN = "test-access-token-0123456789"
RETRY_ONCE = StepConfig(
    retry_strategy=create_retry_strategy(
        RetryStrategyConfig(max_attempts=3, initial_delay=Duration.from_seconds(2), backoff_rate=2.0)
    )
)


def _flaky(step: StepContext) -> str:
    if step.attempt < 2:
        raise RuntimeError("provider timed out")
    return "charged"


@durable_execution
def order_story(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    """A step that retries once, a wait, a callback and a parallel fan-out of two branches."""
    charge = context.step(_flaky, name="charge", config=RETRY_ONCE)
    context.wait(Duration.from_seconds(3600), name="cooling-off")
    approval = context.wait_for_callback(lambda _id, _ctx: None, name="approval")
    shipped = context.parallel(
        [
            lambda ctx: ctx.step(lambda _: "invoice", name="invoice"),
            lambda ctx: ctx.step(lambda _: "parcel", name="ship"),
        ],
        name="fan-out",
    ).get_results()
    return {"charge": charge, "approval": approval, "shipped": shipped, "note": event.get("note")}


@durable_execution
def echo(event: Any, context: DurableContext) -> Any:
    return context.step(lambda _: event, name="echo")


@dataclass
class Console:
    client: StepwellClient
    driver: QueueDriver
    deployment: Deployment
    app: Flask
    http: FlaskClient

    def run(self) -> None:
        """Deliver the work queue's messages (and due schedules) until nothing is left."""
        self.driver.run_until_quiet()

    def run_until_callback(self, execution_id: str) -> str:
        """Run until the execution waits for its callback; returns the callback id."""
        from stepwell.console.timeline import open_callbacks

        for _ in range(20):
            self.driver.run_until_quiet(fire_schedules=False)
            callbacks = open_callbacks(self.client.get_execution_history(execution_id))
            if callbacks:
                return callbacks[0][0]
            assert self.driver._fire_next_schedule(), "the execution never opened its callback"
        raise AssertionError("no callback within 20 rounds")

    def post(self, path: str, data: dict[str, str]) -> Any:
        return self.http.post(path, data={"csrf_token": CSRF, **data})


@pytest.fixture
def console(deployment: Deployment) -> Iterator[Console]:  # noqa: F811 - the adapters' fixture
    registry = Registry()
    registry.register("order-story", order_story)
    registry.register("echo", echo)
    clock = VirtualClock()
    client = StepwellClient(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    app = create_app(client, access_token=ACCESS_TOKEN, csrf_token=CSRF)
    app.testing = True
    yield Console(client, QueueDriver(deployment, runtime, clock), deployment, app, signed_in(app))


def signed_in(app: Flask) -> FlaskClient:
    """A test client holding the console's token cookie, as a browser does after the start URL."""
    http = app.test_client()
    http.set_cookie(token_cookie_name("80"), ACCESS_TOKEN)  # the test client's requests go to port 80
    return http
