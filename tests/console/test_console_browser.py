"""The execution page in headless Chromium: an error's text wraps inside its box, however long its lines
and words, instead of running past the box and the page's right edge."""

from __future__ import annotations

from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.console.server import running_console
from stepwell.testing.console_browser import execution_url, missing_browser

from console.conftest import Console

# One word of 400 characters and a line of 60 words: the lengths of an id, a blob or a long sentence.
LONG_WORD = "order-" + "x" * 394
LONG_LINE = " ".join(["the warehouse refused the parcel"] * 12)


@durable_execution
def refuses(event: Any, context: DurableContext) -> Any:
    raise ValueError(f"{LONG_WORD} {LONG_LINE}")


@pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser()))
def test_a_long_error_wraps_inside_its_box(console: Console) -> None:
    from stepwell.testing.console_browser import headless_chromium

    console.client.engine.registry.register("refuses", refuses)
    execution_id = console.client.start_execution("refuses", None)
    console.run()
    assert console.client.describe_execution(execution_id)["Status"] == "FAILED"
    with running_console(console.client) as url, headless_chromium(width=900, height=800) as driver:
        driver.get(execution_url(url, execution_id))
        failed = _measure(driver, "execution-error")
        driver.get(execution_url(url, LONG_WORD))  # no such execution: the error page names it
        not_found = _measure(driver, "error")
    for box in (failed, not_found):
        assert LONG_WORD in box["text"]
        assert box["scroll"] <= box["client"], box  # nothing hidden to the side
        assert box["right"] <= box["page"], box


def _measure(driver: Any, element_id: str) -> dict[str, Any]:
    """The element's full and visible widths, its right edge, the page's width, and its text."""
    measured: dict[str, Any] = driver.execute_script(
        "const box = document.getElementById(arguments[0]);"
        "return {scroll: box.scrollWidth, client: box.clientWidth, right: box.getBoundingClientRect().right,"
        " page: document.documentElement.clientWidth, text: box.textContent};",
        element_id,
    )
    return measured
