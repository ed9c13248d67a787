"""Stepwell: a durable execution engine for AWS Durable Execution SDK handlers on plain Lambda."""

from typing import Any

from stepwell.core.flow_limits import Concurrency, Rate

__all__ = ["Concurrency", "Rate", "__version__"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # `from stepwell import callback_url` without importing boto3 and the engine on every `import stepwell`.
    if name == "callback_url":
        from stepwell.features.callback_urls import callback_url

        return callback_url
    raise AttributeError(f"module 'stepwell' has no attribute {name!r}")
