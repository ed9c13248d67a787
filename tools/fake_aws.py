"""The AWS settings of a tool that runs against a local AWS (moto in-process, moto's server, LocalStack):
fake credentials, so nothing it does can reach a real account."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from unittest import mock


@contextlib.contextmanager
def fake_aws_environment(region: str, endpoint: str | None = None) -> Iterator[dict[str, str]]:
    """This process's environment with fake credentials in `region`, no profile nor session token, and
    `endpoint` as AWS_ENDPOINT_URL (none: moto's in-process mock answers); restored after. Yields the
    environment, for the processes the tool starts."""
    fake = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
    }
    with mock.patch.dict(os.environ, fake):
        for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
            os.environ.pop(variable, None)
        if endpoint is not None:
            os.environ["AWS_ENDPOINT_URL"] = endpoint
        yield dict(os.environ)
