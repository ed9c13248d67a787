"""The local server for a test that sends requests, shut down after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .support import Server


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    try:
        yield running
    finally:
        running.close()
