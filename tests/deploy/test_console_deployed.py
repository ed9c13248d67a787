"""`stepwell console` in a real browser: Debian's headless Chromium (selenium, /usr/bin/chromedriver)
drives the console served from this process against the deployed stack on moto: the list filtered by
workflow, an execution's timeline, a callback answered and an execution stopped with the page's buttons.

Moto only: the page and its AWS calls are the same on LocalStack (tests/console covers the app itself),
and one browser run is enough. In CI a missing Chromium fails the test; elsewhere it is skipped.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from stepwell.client import StepwellClient
from stepwell.console.timeline import open_callbacks
from stepwell.testing.lambda_runtime import BackendLambdaDriver, LambdaRuntime
from stepwell.testing.scheduler import SchedulerFirer

WAIT_SECONDS = 240.0
WORKFLOW = "orders.fulfil"
ORDER = {"order_id": "web-1", "lines": [{"sku": "kettle", "quantity": 1, "unit_price_cents": 4900}]}

pytestmark = pytest.mark.moto


@pytest.fixture(scope="module")
def browser_reason() -> str | None:
    from stepwell.testing.console_browser import missing_browser

    reason = missing_browser()
    if reason is not None and os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"the browser test must run in CI: {reason}")
    return reason


@pytest.fixture
def browser(browser_reason: str | None) -> Iterator[object]:
    if browser_reason is not None:
        pytest.skip(browser_reason)
    from stepwell.testing.console_browser import headless_chromium

    with headless_chromium() as driver:
        yield driver


def _run_until_callback(
    client: StepwellClient,
    execution_id: str,
    runtime: LambdaRuntime | BackendLambdaDriver,
    firer: SchedulerFirer,
) -> str:
    """Drive the order until it waits for the manager's callback (past the retried charge and the
    three-day cooling-off the scheduler fast-forwards); returns the callback id."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        runtime.drain(timeout_seconds=WAIT_SECONDS)
        callbacks = open_callbacks(client.get_execution_history(execution_id))
        if callbacks:
            return callbacks[0][0]
        assert client.describe_execution(execution_id)["Status"] == "RUNNING"
        firer.advance(timedelta(hours=12))
        firer.fire_due()
    raise AssertionError(f"{execution_id} never opened its callback")


def _rows(driver: object) -> list[str]:
    from selenium.webdriver.common.by import By

    rows = driver.find_elements(By.CSS_SELECTOR, "#timeline svg g.row")  # type: ignore[attr-defined]
    return [row.get_attribute("data-name") for row in rows]


def _submit_confirmed(driver: object, form_selector: str) -> None:
    """Press the form's submit button and accept the page's confirm dialog."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    driver.find_element(By.CSS_SELECTOR, f"{form_selector} button[type=submit]").click()  # type: ignore[attr-defined]
    WebDriverWait(driver, 10).until(expected_conditions.alert_is_present()).accept()


def _wait_for_status(driver: object, status: str, seconds: float = 60.0) -> None:
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    # The page reloads itself on a change; a lookup that lands mid-reload is simply asked again.
    WebDriverWait(driver, seconds, ignored_exceptions=(WebDriverException,)).until(
        expected_conditions.text_to_be_present_in_element((By.ID, "status"), status)
    )


def test_the_console_lists_draws_answers_and_stops_in_a_browser(
    browser: object,
    deployed_client: StepwellClient,
    lambda_runtime: LambdaRuntime | BackendLambdaDriver,
    scheduler_firer: SchedulerFirer,
) -> None:
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait
    from stepwell.console.server import running_console
    from stepwell.testing.console_browser import execution_url

    driver = browser
    run = uuid.uuid4().hex[:8]
    approved = deployed_client.start_execution(WORKFLOW, ORDER, execution_name=f"web-approve-{run}")
    stopped = deployed_client.start_execution(WORKFLOW, ORDER, execution_name=f"web-stop-{run}")
    _run_until_callback(deployed_client, approved, lambda_runtime, scheduler_firer)

    with running_console(deployed_client) as url:
        # The list, filtered by workflow (any status): both orders, each linking to its page.
        driver.get(url)  # type: ignore[attr-defined]
        Select(driver.find_element(By.ID, "filter-status")).select_by_value("")  # type: ignore[attr-defined]
        driver.find_element(By.ID, "filter-workflow").send_keys(WORKFLOW)  # type: ignore[attr-defined]
        apply = driver.find_element(By.ID, "filter-apply")  # type: ignore[attr-defined]
        apply.click()
        # The filter is a GET form: wait for the filtered page to have loaded, or the old page's rows
        # are read as they vanish. (Asking the old button whether it went stale can itself fail
        # mid-navigation with Chrome's "node does not belong to the document".)
        WebDriverWait(driver, 10, ignored_exceptions=(WebDriverException,)).until(
            lambda d: (
                "workflow=" in d.current_url  # type: ignore[attr-defined]
                and d.execute_script("return document.readyState") == "complete"
            )  # type: ignore[attr-defined]
        )
        links = {
            link.text: link
            for link in driver.find_elements(By.CSS_SELECTOR, "a.execution-link")  # type: ignore[attr-defined]
        }
        assert approved in links and stopped in links
        statuses = {
            row.get_attribute("data-status")
            for row in driver.find_elements(By.CSS_SELECTOR, "tr.execution-row")  # type: ignore[attr-defined]
        }
        assert statuses <= {"RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "TIMED_OUT"}
        links[approved].click()

        # The timeline of an order waiting for its manager: the retried charge, the wait, the callback.
        assert driver.find_element(By.ID, "status").text == "RUNNING"  # type: ignore[attr-defined]
        rows = _rows(driver)
        assert rows[:2] == ["execution", "invocations"]
        for expected in ("charge-payment", "cooling-off", "manager-approval"):
            assert expected in rows, rows
        states = [
            segment.get_attribute("data-state")
            for segment in driver.find_elements(  # type: ignore[attr-defined]
                By.CSS_SELECTOR, '#timeline g.row[data-name="charge-payment"] rect.seg'
            )
        ]
        assert states == ["retrying", "retry-delay", "succeeded"]
        # The SDK's callback and submitter fold into the wait_for_callback's row, which waits.
        waiting = driver.find_elements(  # type: ignore[attr-defined]
            By.CSS_SELECTOR, '#timeline g.row[data-kind="WaitForCallback"] rect[data-state="waiting"]'
        )
        assert len(waiting) == 1

        # The manager approves through the callback form; the worker runs; the page sees it end.
        driver.find_element(  # type: ignore[attr-defined]
            By.CSS_SELECTOR, "form.callback-success textarea[name=result]"
        ).send_keys(json.dumps({"approved_by": "browser"}))
        _submit_confirmed(driver, "form.callback-success")
        assert "success sent" in driver.find_element(By.CSS_SELECTOR, ".flash-info").text  # type: ignore[attr-defined]
        lambda_runtime.drain(timeout_seconds=WAIT_SECONDS)
        _wait_for_status(driver, "SUCCEEDED")  # the page polls and reloads on a change
        rows = _rows(driver)
        for expected in ("fulfilment", "issue-invoice", "book-courier", "email-customer"):
            assert expected in rows, rows
        result = json.loads(driver.find_element(By.ID, "result").text)  # type: ignore[attr-defined]
        assert result["approval"] == {"approved_by": "browser"}

        # The other order is stopped with the button.
        driver.get(execution_url(url, stopped))  # type: ignore[attr-defined]
        assert driver.find_element(By.ID, "status").text == "RUNNING"  # type: ignore[attr-defined]
        _submit_confirmed(driver, "#stop-form")
        _wait_for_status(driver, "STOPPED", seconds=10)
        assert deployed_client.describe_execution(stopped)["Status"] == "STOPPED"
        assert driver.find_elements(By.ID, "stop") == []  # type: ignore[attr-defined]
