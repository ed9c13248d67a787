"""A function's event invoke config as the local runtime plays it: how often a failed asynchronous event
is retried, how old it may get, and the SQS queues its on-success and on-failure records go to.

Read from the backend's Lambda API (GetFunctionEventInvokeConfig with the version or alias as qualifier),
as ``FunctionSpec`` is, so a config Terraform puts (aws_lambda_function_event_invoke_config) is what the
next event sees. moto stores the config per function, not per qualifier, and a second put leaves the
first in place (its get answers the first); LocalStack keeps one per qualifier, as Lambda does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from stepwell.aws.clients import error_code
from stepwell.testing.async_invoke import DEFAULT_MAXIMUM_EVENT_AGE_SECONDS, DEFAULT_MAXIMUM_RETRY_ATTEMPTS

SQS_ARN_PREFIX = "arn:aws:sqs:"


@dataclass(frozen=True)
class EventInvokeConfig:
    """A version's or alias's event invoke config; a destination is a queue ARN, "" when none."""

    maximum_retry_attempts: int = DEFAULT_MAXIMUM_RETRY_ATTEMPTS
    maximum_event_age_seconds: int = DEFAULT_MAXIMUM_EVENT_AGE_SECONDS
    on_success: str = ""
    on_failure: str = ""


def _destination(config: dict[str, Any], which: str) -> str:
    destination = config.get("DestinationConfig", {}).get(which, {}).get("Destination", "")
    if not isinstance(destination, str):
        raise ValueError(f"{which} destination {destination!r} is not an ARN")
    if destination and not destination.startswith(SQS_ARN_PREFIX):
        raise ValueError(
            f"{which} destination {destination!r}: only SQS queues ({SQS_ARN_PREFIX}...) are played locally"
        )
    return destination


def read_event_invoke_config(
    lambda_client: Any, function_name: str, qualifier: str | None
) -> EventInvokeConfig:
    """The config of ``function_name`` at ``qualifier`` (None: $LATEST); Lambda's defaults when it has
    none (two retries, six hours, no destinations)."""
    request: dict[str, str] = {"FunctionName": function_name}
    if qualifier:
        request["Qualifier"] = qualifier
    try:
        config: dict[str, Any] = lambda_client.get_function_event_invoke_config(**request)
    except ClientError as error:
        if error_code(error) != "ResourceNotFoundException":
            raise
        return EventInvokeConfig()
    return EventInvokeConfig(
        maximum_retry_attempts=int(config.get("MaximumRetryAttempts", DEFAULT_MAXIMUM_RETRY_ATTEMPTS)),
        maximum_event_age_seconds=int(
            config.get("MaximumEventAgeInSeconds", DEFAULT_MAXIMUM_EVENT_AGE_SECONDS)
        ),
        on_success=_destination(config, "OnSuccess"),
        on_failure=_destination(config, "OnFailure"),
    )
