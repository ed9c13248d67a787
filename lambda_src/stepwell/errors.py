"""Errors the engine raises to its callers (client, CLI, worker entry, tests)."""

from __future__ import annotations


class StepwellError(Exception):
    """Base class of Stepwell's errors."""


class InvalidWorkflowName(StepwellError, ValueError):
    pass


class DuplicateWorkflow(StepwellError, ValueError):
    pass


class WorkflowNotFound(StepwellError, LookupError):
    pass


class InvalidArgument(StepwellError, ValueError):
    pass


class PayloadTooLarge(InvalidArgument):
    """A payload over one of the deployment's limits (stepwell.limits): the message names the limit, the
    size and the setting that changes it."""


class ExecutionNotFound(StepwellError, LookupError):
    pass


class CallbackNotFound(StepwellError, LookupError):
    """The callback id is unknown, or its callback already completed (CallbackAlreadyClosed)."""


class CallbackAlreadyClosed(CallbackNotFound):
    """The callback completed or timed out before this send (AWS: "has already been closed"); a
    CallbackNotFound for callers that treat both alike."""


class ExecutionAlreadyEnded(StepwellError):
    pass


class ExecutionStateConflict(StepwellError):
    """The execution's status does not allow the request (AWS's ResourceConflictException): a pause or a
    resume of an execution that has ended, a delete of one that has not."""


class ExecutionAlreadyExists(StepwellError, ValueError):
    """An execution of that name exists with a different input (the same input returns it)."""


class InvalidMessage(StepwellError, ValueError):
    """A work-queue body that is not an engine message (it belongs in the DLQ)."""


class SequenceConflict(StepwellError):
    """append_batch found its seq taken: another worker holds the execution (this one is fenced)."""

    def __init__(self, message: str, written_at: float | None = None) -> None:
        super().__init__(message)
        # When the batch that holds the seq was written, if the store tells: a batch written before the
        # execution was created is not another worker's but an earlier execution's under the same name.
        self.written_at = written_at


class StaleCheckpointToken(StepwellError):
    """A checkpoint arrived with a token that is not the current one of this invocation."""


class PayloadMissing(StepwellError, LookupError):
    """A payload reference names no object: after an ended execution's retention its payloads expire
    (possibly before its items do), or the bucket lost it."""


class LogIncomplete(PayloadMissing):
    """A batch of the execution's log is missing (its items expired, in any order, under the table's TTL):
    the log is never folded with a gap, nor replayed from a later batch."""


class LogOfEarlierExecution(LogIncomplete):
    """The execution's log holds a batch written before the execution was created: an earlier execution
    under the same name left it (the table's TTL removed that one's record before its log). The run fails
    rather than replay that execution or wait, fenced, at its first batch."""


class VersionNotFound(InvalidArgument):
    """A worker function version that is not published (or was deleted)."""


class ForwardFailed(StepwellError):
    """A message could not be run by the version its execution is pinned to: the synchronous invoke of
    that version failed, or the version no longer exists (`version_missing`)."""

    def __init__(self, message: str, version: str, version_missing: bool = False) -> None:
        super().__init__(message)
        self.version = version
        self.version_missing = version_missing
