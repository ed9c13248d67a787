"""The WorkQueue port that wakes an execution now by invoking the worker's alias asynchronously.

A client's start, callback result, stop or upgrade wakes its execution with an invoke message and no delay.
On the queue that costs three SQS requests (the send, then the mapping's receive and delete); invoked
asynchronously on the alias (`wake_function_arn`) it costs one Lambda request, and Lambda keeps the event,
retries a failed run twice and hands the event to the work queue after that (the alias's event invoke
config), so nothing is lost that the queue would have kept. Delayed messages, and every other kind, go to
the queue as before.

Any refusal (no lambda:InvokeFunction on the alias in an older policy, throttling, a network error) sends
the message to the queue instead. A refusal that will not pass by retrying (access denied, no such alias)
also sends the next wake-ups straight to the queue for `PAUSE_SECONDS`, so an older policy costs one
refused request per pause, not one per wake-up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from stepwell.aws.clients import error_code
from stepwell.aws.work_queue import encode_message
from stepwell.ports import WorkQueue

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

LOG = logging.getLogger(__name__)

PAUSE_SECONDS = 600.0
# Refusals that the same request would meet again (an older access policy, a module without the alias).
LASTING_REFUSALS = frozenset(
    {
        "AccessDeniedException",
        "AccessDenied",
        "ResourceNotFoundException",
        "KMSAccessDeniedException",
        "UnrecognizedClientException",
    }
)


class DirectWakeQueue:
    """Invoke messages without a delay go to the worker's alias as asynchronous invocations; the rest, and
    any the alias refuses, to `queue`."""

    def __init__(
        self,
        queue: WorkQueue,
        lambda_client: LambdaClient,
        wake_function_arn: str,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not wake_function_arn:
            raise ValueError("DirectWakeQueue needs the worker alias's ARN (wake_function_arn)")
        self.queue = queue
        self._lambda = lambda_client
        self.wake_function_arn = wake_function_arn
        self._monotonic = monotonic
        self._paused_until = 0.0

    def enqueue(self, body: Mapping[str, Any], delay_seconds: int = 0) -> None:
        if delay_seconds == 0 and body.get("kind") == "invoke" and self._invoke(body):
            return
        self.queue.enqueue(body, delay_seconds)

    def _invoke(self, body: Mapping[str, Any]) -> bool:
        """Whether Lambda took the event (202)."""
        if self._monotonic() < self._paused_until:
            return False
        try:
            self._lambda.invoke(
                FunctionName=self.wake_function_arn,
                InvocationType="Event",
                Payload=encode_message(body).encode("utf-8"),
            )
        except ClientError as error:
            code = error_code(error)
            if code in LASTING_REFUSALS:
                self._paused_until = self._monotonic() + PAUSE_SECONDS
                LOG.warning(
                    "invoking %s was refused (%s): wake-ups go to the work queue for the next %.0f s; "
                    "grant lambda:InvokeFunction on the alias (the module's operator policy does)",
                    self.wake_function_arn,
                    code,
                    PAUSE_SECONDS,
                )
            else:
                _log_fallback(self.wake_function_arn, code)
            return False
        except BotoCoreError as error:
            _log_fallback(self.wake_function_arn, type(error).__name__)
            return False
        return True


def _log_fallback(function_arn: str, cause: str) -> None:
    LOG.info("invoking %s failed (%s): this wake-up goes to the work queue", function_arn, cause)
