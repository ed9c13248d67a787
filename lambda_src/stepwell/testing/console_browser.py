"""Debian's headless Chromium driving the console (the browser test and `make screenshot`).

`make browser` installs the `chromium` and `chromium-driver` packages; selenium talks to
/usr/bin/chromedriver directly (no driver download). We run as root, hence --no-sandbox.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from stepwell.client import StepwellClient
from stepwell.console.server import running_console

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def missing_browser() -> str | None:
    """Why the browser cannot run here, or None when it can."""
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if not missing:
        return None
    return f"{' and '.join(missing)} not installed (`make browser` installs chromium and chromium-driver)"


@contextmanager
def headless_chromium(width: int = 1400, height: int = 1000) -> Iterator[WebDriver]:
    options = Options()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def execution_url(console_url: str, execution_id: str) -> str:
    """The execution's page under the console's start URL, with its token: a fresh browser has no cookie."""
    base, _, query = console_url.partition("?")
    return f"{base}execution?{urlencode({'id': execution_id, **dict(parse_qsl(query))})}"


def save_timeline_screenshot(client: StepwellClient, execution_id: str, output: Path) -> Path:
    """The timeline section of the execution's console page as a PNG."""
    with running_console(client) as url, headless_chromium() as driver:
        driver.get(execution_url(url, execution_id))
        section = driver.find_element(By.ID, "timeline-section")
        output.parent.mkdir(parents=True, exist_ok=True)
        if not section.screenshot(str(output)):
            raise RuntimeError(f"chromium could not write the screenshot {output}")
    return output
