"""The Lambda handler of the `<name>-callbacks` function (its function URL's requests): a CallbackUrlHandler
(stepwell.features.callback_urls) on an engine built from the environment the module sets."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from typing import Any

from stepwell.aws.clients import AwsClients
from stepwell.clock import SystemClock
from stepwell.config import StepwellConfig
from stepwell.core.logs import install_json_logging
from stepwell.core.registry import Registry
from stepwell.errors import InvalidArgument
from stepwell.features.callback_urls import (
    DEFAULT_MAX_BODY_BYTES,
    MAX_BODY_ENV,
    SECRET_ARN_ENV,
    CallbackUrlHandler,
    check_secret_arn,
    read_secret,
)
from stepwell.wiring.build import build_engine

_WHOLE_NUMBER = re.compile(r"[0-9]{1,12}")
_handler: CallbackUrlHandler | None = None
_handler_lock = threading.Lock()


def load_handler(environ: Mapping[str, str] | None = None) -> CallbackUrlHandler:
    """The container's handler, built once from the environment the module sets."""
    global _handler
    with _handler_lock:
        if _handler is None:
            env = os.environ if environ is None else environ
            config = StepwellConfig.from_env(env)
            install_json_logging(config.log_level)
            clients = AwsClients(region=config.region or None)
            engine = build_engine(config, clients, Registry(), SystemClock())
            engine.code_version = None
            max_body = env.get(MAX_BODY_ENV, "") or str(DEFAULT_MAX_BODY_BYTES)
            if not _WHOLE_NUMBER.fullmatch(max_body):
                raise InvalidArgument(f"{MAX_BODY_ENV} must be a whole number of bytes, got {max_body!r}")
            secret_arn = env.get(SECRET_ARN_ENV, "")
            loader = None
            if secret_arn:
                check_secret_arn(secret_arn)

                def loader() -> bytes:
                    return read_secret(secret_arn)

            _handler = CallbackUrlHandler(engine, max_body_bytes=int(max_body), secret_loader=loader)
        return _handler


def handler(event: Any, context: Any) -> dict[str, Any]:
    """The Lambda handler of the `<name>-callbacks` function (its function URL's requests)."""
    return load_handler().handle(event)
