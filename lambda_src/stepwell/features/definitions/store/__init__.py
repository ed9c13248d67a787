"""Where definitions, contexts and event records live: one Protocol each, a memory and a DynamoDB
implementation of each (the DynamoDB ones take a boto3 client; Queries, Gets, conditional writes only).

Definitions (the definitions table, PK `domain`, SK `workflowId`), the semantics of omega-flow's store:
- the latest version of a definition is the item (domain, workflowId): `definition` (JSON text),
  `version` (N), `createdAt` (N, epoch ms, first write) and `updatedAt` (N, epoch ms, every write);
- every version is also kept as (domain + "#versions", workflowId + "#" + zero-padded version), for the
  operator (get a version, list them: the version a context names), the numbering and the waits record;
- the domain's waits record (domain, "~waits"): every event name a version of its definitions waits for.

Deleting a definition (`delete_workflow`) removes its latest item at once and gives its version items a
`ttl` of the retention period ahead (and the waits record too, when no definition of the domain is left),
so nothing it wrote stays for ever. A context of a deleted definition runs on regardless: nothing bounds
its life (a cycle through a wait is allowed, and the interpreter has no execution timeout), so nothing it
needs may depend on a horizon. It needs no version item (its definition travels in its execution's input)
and, for its events to resume it, only that a waits record that says it is complete names its events:
the record only grows while it stands, a missing one means "every event reads the subject's contexts",
and one written afresh is complete only if every RUNNING context of the domain has its version item
(else it is written incomplete, and every later write checks again). Each finished context that names a
version expired at most the retention period after the delete, as its version item does. Setting the id
again continues the numbering from the versions still stored and removes their `ttl` (and the waits
record's) again.

Contexts (the executions table, PK `contextKey` = domain#workflowId#subjectId, SK `instanceId`), the
semantics of omega-flow's workflow memory. A context item carries recordType = "context", domain,
subjectId, wf (the definition id), cs (its status; not workflowId and status, which would put every
context in the engine's workflow-index and status-index: an item written before has those, finishing it
moves them), createdAt/updatedAt (N, epoch seconds like the
engine's items on this table), nm (= instanceId), ver (definition version), eid (the id of the engine
execution that runs it), dt (context data, JSON), wt (a map: node id -> {e: event name, cb: callback id}
for every event the context waits for), tev (the id of the event that started it), er (error JSON).
Listing by subject or by domain uses the (domain, subjectId) GSI, filtered to recordType = "context".

Event records (the coordination table, PK `key`): `evt#...` de-duplication records (conditional puts,
expiring through `ttl`), and rejected events `rejected#<event id>` with dueShard = "rejected" and
dueAt = when, so `list_rejected` is a Query on the due-index.

The modules: `records` (the records, the Protocols and the checks both backends share), `memory` (the
memory stores), `dynamodb_definitions` (definitions on DynamoDB), `dynamodb` (contexts and event records on
DynamoDB); ids and sizes are `stepwell.features.definitions.ids`. This package exports what callers use.
"""

from __future__ import annotations

from stepwell.features.definitions.ids import (
    MAX_CONTEXT_DATA_BYTES,
    MAX_ID_LENGTH,
    InvalidId,
    StoreError,
    check_id,
    check_workflow_id,
)
from stepwell.features.definitions.store.dynamodb import DynamoDbContextStore, DynamoDbEventLog
from stepwell.features.definitions.store.dynamodb_definitions import DynamoDbDefinitionStore
from stepwell.features.definitions.store.memory import (
    MemoryContextStore,
    MemoryDefinitionStore,
    MemoryEventLog,
)
from stepwell.features.definitions.store.records import (
    CONTEXT_STATUSES,
    DEDUP_TTL_SECONDS,
    ConcurrentUpdate,
    ContextDataTooLarge,
    ContextRecord,
    ContextStore,
    DefinitionStore,
    EventLog,
    StoredWorkflow,
    Validator,
    WorkflowAlreadyExistsError,
    encode_context_data,
    waited_events,
)

__all__ = [
    "CONTEXT_STATUSES",
    "DEDUP_TTL_SECONDS",
    "MAX_CONTEXT_DATA_BYTES",
    "MAX_ID_LENGTH",
    "ConcurrentUpdate",
    "ContextDataTooLarge",
    "ContextRecord",
    "ContextStore",
    "DefinitionStore",
    "DynamoDbContextStore",
    "DynamoDbDefinitionStore",
    "DynamoDbEventLog",
    "EventLog",
    "InvalidId",
    "MemoryContextStore",
    "MemoryDefinitionStore",
    "MemoryEventLog",
    "StoreError",
    "StoredWorkflow",
    "Validator",
    "WorkflowAlreadyExistsError",
    "check_id",
    "check_workflow_id",
    "encode_context_data",
    "waited_events",
]
