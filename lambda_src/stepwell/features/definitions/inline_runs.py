"""Running an execution here, in the worker's invocation that started or resumed it, rather than a queue hop
later: the router does it for the contexts an event starts or resumes, a continuation for the execution it
hands off to. A run that cannot be made here (another worker holds the lease, another version runs it) or
fails is left to a message; when that cannot be sent either, the caller's error makes its own retry."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from stepwell.core.run import Known
from stepwell.core.worker import InvocationContext, Worker
from stepwell.model import InvokeMessage, OutcomeAction

logger = logging.getLogger(__name__)


def run_here_or_wake(
    worker: Worker, execution_id: str, *, time_left: Callable[[], float] | None, known: Known
) -> None:
    """Run `execution_id` on `worker` now, its actions seeing `time_left` (the invocation's); else enqueue
    its message."""
    invocation = InvocationContext(uuid.uuid4().hex, time_left=time_left) if time_left else None
    try:
        outcome = worker.run(execution_id, invocation, known=known)
    except Exception as error:  # the type only: a message may quote the execution's data
        logger.warning("run of %s here failed (%s): a message wakes it", execution_id, type(error).__name__)
        outcome = None
    if outcome is None or outcome.action in (OutcomeAction.BUSY, OutcomeAction.FORWARD):
        worker.engine.queue.enqueue(InvokeMessage(execution_id).to_body())
