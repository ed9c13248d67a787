"""Code versions: the engine's policy on the worker function's published versions.

Executions are pinned to the version they started on (stepwell.core.worker pins, stepwell.wiring.entry
forwards);
here: which old versions may be deleted, which version takes on the executions that started before
versions existed, and how a replay that disagrees with its log is explained.
"""

from __future__ import annotations

import ast
import itertools
import json
import logging
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from aws_durable_execution_sdk_python.lambda_service import Operation

from stepwell.core.batch_keys import CODE_VERSION
from stepwell.errors import InvalidArgument
from stepwell.model import Batch, ExecutionQuery, ExecutionStatus, FunctionVersion
from stepwell.ports import ExecutionStore, FunctionVersions, VersionPins

logger = logging.getLogger(__name__)

# The reconciler deletes a version only once the version after it was published this long ago: an
# invocation of the old one that started before the alias moved on has ended (Lambda runs at most 15
# minutes) and an execution whose first run it was, if still running, is pinned as that run ended and is
# in the version index (eventually consistent), so the count before the deletion sees it. A first run
# killed before its pin is retried once the work queue's visibility timeout runs out (the module's default
# is six times the worker's timeout: at most 90 minutes), and the retry pins the execution to the version
# its log names: two hours cover that too, and a longer visibility timeout lengthens the grace
# (prune_grace_seconds).
PRUNE_GRACE_SECONDS = 7200.0
# What the grace keeps past the visibility timeout: the retried run itself (Lambda's 15 minutes) and as
# much again for the retry's own delivery.
_RETRY_RUN_SECONDS = 1800.0

NONDETERMINISM_ERROR = "NonDeterministicExecutionError"
# The SDK's message names the operation by id and each part that differs as `<part> checkpoint=<log>
# current=<code>` (aws_durable_execution_sdk_python.identifier.OperationIdentifier.validate_checkpoint).
_OPERATION_ID = re.compile(r"\bid='([^']*)'")
_REPR = r"(None|'[^']*'|\"[^\"]*\")"
_MISMATCH = re.compile(rf"\b(type|name) checkpoint={_REPR} current={_REPR}")


def running_version(environ: Mapping[str, str]) -> str | None:
    """The worker function version this process runs as: Lambda sets AWS_LAMBDA_FUNCTION_VERSION in each
    version's environment. "$LATEST" or none is an unversioned worker (it never pins nor forwards)."""
    version = environ.get("AWS_LAMBDA_FUNCTION_VERSION", "")
    return version if version and version != "$LATEST" else None


def _version_order(version: str) -> tuple[int, str]:
    return (int(version), "") if version.isdigit() else (-1, version)


def prune_versions(
    store: VersionPins,
    functions: FunctionVersions,
    *,
    keep: int,
    now: float | None = None,
    grace: float = 0.0,
) -> list[str]:
    """Delete the published versions nothing needs any more; returns the deleted ones, oldest first.

    Never deleted: the newest `keep` versions, a version an alias points to, a version newer than the
    alias's (a deploy in progress), a version any RUNNING execution is pinned to (counted right before
    its deletion), and with a `grace` (seconds; the reconciler's is prune_grace_seconds) one whose next
    version was published less than that before `now` (or at a time Lambda does not tell). Without an
    alias version nothing is deleted: which code is live is unknown.
    """
    if not isinstance(keep, int) or isinstance(keep, bool) or keep < 1:
        raise InvalidArgument(f"keep must be a whole number of versions, at least 1; got {keep!r}")
    current = functions.current_version()
    if current is None:
        return []
    published = sorted(functions.list_versions(), key=lambda v: _version_order(v.version))
    newest = {v.version for v in published[-keep:]}
    deleted: list[str] = []
    for candidate, successor in itertools.pairwise(published):
        version = candidate.version
        if version in newest or candidate.aliases:
            continue
        if _version_order(version) >= _version_order(current):
            continue
        if grace > 0 and not _published_before(successor, (now or 0.0) - grace):
            continue  # it may still run an invocation that started before the alias moved on
        if store.count_pinned(version) > 0:
            continue
        functions.delete_version(version)
        logger.info("deleted worker version %s: no running execution is pinned to it", version)
        deleted.append(version)
    return deleted


# Releases before code versions never published the worker, so the first apply of a release with them
# publishes version 1, and an upgrade done as docs/engine.md says (that apply with the workflow code
# unchanged) leaves in it the code the executions from before started on.
FIRST_VERSION = "1"


def adopt_unversioned(store: ExecutionStore, functions: FunctionVersions, page_size: int = 100) -> list[str]:
    """Pin to version 1 every RUNNING execution whose log was written by a worker without versions (no
    pin, a log whose first batch names no version: it started before versions); returns their ids.

    Without this a waiting one stays unpinned, and the first worker to run it after the next deploy pins
    it to that deploy's code, which its log may not match (NonDeterministicExecutionError). Done before
    the pruning of each reconcile run, so version 1 (kept while an execution is pinned to it) cannot go
    while one is left; nothing is done once version 1 is gone. An unpinned execution whose log is empty
    (not run yet) or names a version (its first run died before its pin) is left to the worker, which
    runs the first or pins the second to the version that wrote its log.
    """
    if FIRST_VERSION not in {entry.version for entry in functions.list_versions()}:
        return []
    adopted: list[str] = []
    token: str | None = None
    while True:
        page = store.list_executions(
            ExecutionQuery(status=ExecutionStatus.RUNNING), limit=page_size, next_token=token
        )
        for record in page.items:
            if record.status is not ExecutionStatus.RUNNING or record.code_version is not None:
                continue
            if not _logged_without_versions(store, record.execution_id):
                continue
            # Conditional on no pin: a first run or an upgrade that pinned it meanwhile decides.
            if store.pin_version(record.execution_id, FIRST_VERSION, expected=None):
                # A worker that read the record before this pin learns it from the lease it takes.
                store.note_moved_version(record.execution_id, FIRST_VERSION)
                logger.warning(
                    "execution %s started before code versions: pinned to worker version %s, which holds "
                    "the code it started on if the upgrade's first apply left the workflow code unchanged",
                    record.execution_id,
                    FIRST_VERSION,
                )
                adopted.append(record.execution_id)
        token = page.next_token
        if not token:
            return adopted


def _logged_without_versions(store: ExecutionStore, execution_id: str) -> bool:
    """Whether the execution's log is not empty and its first batch names no version: a versioned
    worker's first run names its version in the first batch it writes (Journal.run_on's `v`)."""
    batches, _ = store.load_batches(execution_id, limit=1)
    first: Batch | None = batches[0] if batches else store.get_carried_batch(execution_id)
    if first is None:
        return False
    if first.body_is_ref:
        # Too big for an item (the reconciler has no payload store to read it): leave it to the worker.
        logger.error(
            "execution %s: its log's first batch is stored apart; not checked for a version", execution_id
        )
        return False
    try:
        body = json.loads(first.body)
    except ValueError:
        return False
    return isinstance(body, dict) and CODE_VERSION not in body


def prune_grace_seconds(visibility_timeout: float) -> float:
    """The reconciler's grace (prune_versions) for a work queue with this visibility timeout (seconds; 0
    when not known): PRUNE_GRACE_SECONDS, or longer when a killed first run's retry may come later."""
    return max(PRUNE_GRACE_SECONDS, visibility_timeout + _RETRY_RUN_SECONDS)


def _published_before(version: FunctionVersion, moment: float) -> bool:
    """Whether Lambda says `version` was published before `moment` (its LastModified, ISO 8601)."""
    try:
        published = datetime.fromisoformat(version.last_modified).timestamp()
    except ValueError:
        return False
    return published < moment


def _literal(text: str) -> str | None:
    value = ast.literal_eval(text)
    return value if isinstance(value, str) else None


def _label(operation_type: str, name: str | None) -> str:
    return f"{operation_type} {name!r}" if name else f"{operation_type} (unnamed)"


def explain_replay_mismatch(
    error: dict[str, Any], operations: Mapping[str, Operation], version: str | None
) -> dict[str, Any]:
    """The failure of a replay whose code disagrees with the log (the SDK's NonDeterministicExecutionError),
    its message restated with the operation's id and name and what the log and the code each have there;
    any other error as it is. The ErrorType stays the SDK's."""
    message = error.get("ErrorMessage")
    if not str(error.get("ErrorType", "")).endswith(NONDETERMINISM_ERROR) or not isinstance(message, str):
        return error
    found = _OPERATION_ID.search(message)
    logged = operations.get(found.group(1)) if found else None
    if found is None or logged is None:
        return error
    log_type, log_name = logged.operation_type.value, logged.name
    code: dict[str, str | None] = {"type": log_type, "name": log_name}
    for part, _, current in _MISMATCH.findall(message):
        code[part] = _literal(current)
    on_version = f" on worker version {version}" if version is not None else ""
    explained = (
        f"the workflow code does not match the execution's log at operation {found.group(1)!r} "
        f"({log_name or 'unnamed'}): the log has {_label(log_type, log_name)}, the code{on_version} has "
        f"{_label(code['type'] or '?', code['name'])}. An execution replays on the version it started on "
        "unless moved (stepwell executions upgrade) to code whose operations match its log. "
        f"[SDK: {message}]"
    )
    return {**error, "ErrorMessage": explained}
