"""ListDurableExecutionsByFunction: a workflow's executions from the store's workflow index, newest first or
(ReverseOrder=true) oldest first, filtered by status, name, start window, version and, for a
tenant-scoped caller, tenant, in pages of MaxItems with a NextMarker.

The filters are applied here, on the records the store lists, so a page is filled from as many store pages
as it takes. A NextMarker continues right after the last execution answered (the store's token positioned
there), so every page but the last holds MaxItems, and a tenant-scoped caller's marker names only one of
its own executions: its pages show nothing of other tenants, not even how many there are. A caller with
deployment-wide access gets a shorter page once MAX_LIST_STORE_PAGES store pages were read, with a marker
to go on; a tenant-scoped caller's page is filled for up to LIST_SECONDS, and only past them answers what
it found (or, having found nothing, TooManyRequestsException asking for a narrower start window)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from stepwell.features.lambda_api.arns import LATEST
from stepwell.features.lambda_api.context import ANSWER_MARGIN_SECONDS, ApiContext
from stepwell.features.lambda_api.errors import ApiError, invalid
from stepwell.features.lambda_api.executions import MAX_MARKER_LENGTH, function_ref, version_filter
from stepwell.features.lambda_api.wire import Request, Response
from stepwell.model import KEY_PART_PATTERN, KEY_PART_RULE, ExecutionQuery, ExecutionRecord, Page

# The model's ExecutionStatus enum (Statuses filter): PAUSING, PAUSED and DELETING are AWS's too.
STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "STOPPED", "DELETING", "PAUSING", "PAUSED")
MAX_STATUSES = 10
# Store pages one call reads at most for a caller with deployment-wide access while its filters leave
# executions out; past them it answers what it found and a NextMarker to go on.
MAX_LIST_STORE_PAGES = 10
# How long a tenant-scoped caller's page is filled at most (besides the request's remaining time).
LIST_SECONDS = 10.0
# The most executions one store read asks for: each read while filters leave executions out asks for
# twice the one before (and at least what the page still needs), so a filter that keeps most costs no
# more than no filter, and one that keeps few takes few reads.
MAX_READ = 1000
# Reads of a store page's beginning at most to place a marker after an execution (the listing may
# change between reads: executions started or deleted meanwhile).
MARKER_READS = 3


class _Place(Enum):
    BEFORE = "before"  # not yet in the start window (read on)
    IN = "in"
    PAST = "past"  # past the window: nothing further can be in it


@dataclass(frozen=True)
class _Filters:
    statuses: frozenset[str]
    name: str | None
    after: float | None
    before: float | None
    version: str | None
    oldest_first: bool

    def place(self, record: ExecutionRecord) -> _Place:
        started = record.created_at
        too_early = self.after is not None and started <= self.after
        too_late = self.before is not None and started >= self.before
        if self.oldest_first:
            return _Place.PAST if too_late else _Place.BEFORE if too_early else _Place.IN
        return _Place.PAST if too_early else _Place.BEFORE if too_late else _Place.IN

    def wanted(self, record: ExecutionRecord) -> bool:
        return (
            (not self.statuses or record.status.value in self.statuses)
            and (self.name is None or record.execution_name == self.name)
            and (self.version is None or (record.code_version or LATEST) == self.version)
        )


def list_by_function(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    function = function_ref(api, params["function"], request.query_string("Qualifier", 128))
    name = request.query_string("DurableExecutionName", 128)
    if name is not None and not KEY_PART_PATTERN.match(name):
        raise invalid(f"DurableExecutionName {name!r} is no execution name: {KEY_PART_RULE}")
    statuses = frozenset(request.query_strings("Statuses", MAX_STATUSES))
    unknown = sorted(statuses - set(STATUSES))
    if unknown:
        raise invalid(f"Statuses {unknown} are not statuses; allowed: {', '.join(STATUSES)}")
    filters = _Filters(
        statuses=statuses,
        name=name,
        after=request.query_time("StartedAfter"),
        before=request.query_time("StartedBefore"),
        version=version_filter(api, function.qualifier),
        oldest_first=request.query_bool("ReverseOrder", False),
    )
    max_items = request.query_int("MaxItems", 0, 1000) or 100
    marker = request.query_string("Marker", MAX_MARKER_LENGTH)
    found, next_marker = _Lister(api, ExecutionQuery(workflow_id=function.name), filters).page(
        max_items, marker
    )
    answer: dict[str, Any] = {"DurableExecutions": [_listed(api, record) for record in found]}
    if next_marker is not None:
        answer["NextMarker"] = next_marker
    return Response.json(answer)


class _Lister:
    """One page of a listing, read from the store's pages."""

    def __init__(self, api: ApiContext, query: ExecutionQuery, filters: _Filters) -> None:
        self.api = api
        self.query = query
        self.filters = filters
        self.now = api.engine.clock.now()
        budget = LIST_SECONDS
        if api.remaining_seconds is not None:
            budget = min(budget, api.remaining_seconds - ANSWER_MARGIN_SECONDS)
        self.deadline = api.monotonic() + max(0.0, budget)

    def _read(self, limit: int, token: str | None) -> Page[ExecutionRecord]:
        return self.api.engine.store.list_executions(
            self.query, limit=limit, next_token=token, oldest_first=self.filters.oldest_first
        )

    def _shown(self, record: ExecutionRecord) -> bool:
        """Whether the page may hold `record`: it matches, the caller reaches its tenant, and its retention
        has not passed (the API shows no execution past it)."""
        scope = self.api.scope
        return (
            (scope is None or scope.allows(record.domain))
            and self.filters.wanted(record)
            and not self.api.engine.retention_passed(record.ended_at, self.now)
        )

    def _token_shows_nothing_hidden(self, page: Page[ExecutionRecord], asked: int) -> bool:
        """Whether `page`'s token may be answered: always to a caller with deployment-wide access; to a
        tenant-scoped one when it is positioned at an execution of its tenants (the page's last, which
        it is when the store listed as many as asked)."""
        scope = self.api.scope
        if scope is None:
            return True
        return bool(page.items) and len(page.items) == asked and scope.allows(page.items[-1].domain)

    def page(self, max_items: int, marker: str | None) -> tuple[list[ExecutionRecord], str | None]:
        """Up to `max_items` executions after `marker`, and the marker that goes on after them."""
        scoped = self.api.scope is not None
        found: list[ExecutionRecord] = []
        # Where the last execution found was read: the store token its page began at, and its index there.
        last: tuple[str | None, int] | None = None
        token = marker
        reads = 0
        asked = 0
        while True:
            need = max_items - len(found)
            asked = min(MAX_READ, max(need, asked * 2))
            page = self._read(asked, token)
            reads += 1
            kept: list[int] = []
            ended = page.next_token is None
            for index, record in enumerate(page.items):
                place = self.filters.place(record)
                if place is _Place.PAST:
                    ended = True
                    break
                if place is _Place.IN and self._shown(record):
                    kept.append(index)
            if len(kept) >= need:
                found += [page.items[index] for index in kept[:need]]
                if len(kept) == need and ended:
                    return found, None
                if len(kept) == need and self._token_shows_nothing_hidden(page, asked):
                    return found, page.next_token  # the rest of the page is left out anyway
                return found, self._after(token, kept[need - 1], found[-1])
            found += [page.items[index] for index in kept]
            if kept:
                last = (token, kept[-1])
            if ended:
                return found, None
            token = page.next_token
            if not scoped and reads >= MAX_LIST_STORE_PAGES:
                return found, token
            if scoped and self.api.monotonic() >= self.deadline:
                # The store's token may be positioned at another tenant's execution: go on after the last
                # execution found instead, or refuse when there is none (nothing of theirs is told).
                if last is None:
                    raise ApiError(
                        "TooManyRequestsException",
                        f"listing took longer than {LIST_SECONDS:.0f} s before it found an execution of your "
                        "tenants; list a narrower window (StartedAfter, StartedBefore)",
                    )
                start, index = last
                return found, self._after(start, index, found[-1])

    def _after(self, start: str | None, index: int, record: ExecutionRecord) -> str | None:
        """The store's token positioned right after `record`, the execution at `index` of the store page
        that began at `start`: that page's beginning read again, up to `record`."""
        limit = index + 1
        for _ in range(MARKER_READS):
            again = self._read(limit, start)
            ids = [each.execution_id for each in again.items]
            if ids and ids[-1] == record.execution_id:
                return again.next_token
            if record.execution_id in ids:  # executions before it went meanwhile: a shorter read
                limit -= len(ids) - 1 - ids.index(record.execution_id)
            else:  # executions before it came meanwhile (or its own index entry has none): a longer one
                limit = min(1000, limit + 1)
            limit = max(1, limit)
        raise ApiError(
            "TooManyRequestsException",
            "the function's executions changed while they were listed; try again",
        )


def _listed(api: ApiContext, record: ExecutionRecord) -> dict[str, Any]:
    item: dict[str, Any] = {
        "DurableExecutionArn": api.arns.execution_arn(record.execution_id),
        "DurableExecutionName": record.execution_name,
        "FunctionArn": api.arns.function_arn(record.workflow_id, record.code_version),
        "Status": record.status.value,
        "StartTimestamp": record.created_at,
    }
    if record.ended_at is not None:
        item["EndTimestamp"] = record.ended_at
    return item
