"""The engine's ExecutionStore on DynamoDB (tables and indexes as docs/reference/tables.md describes them).

Access patterns are GetItem, BatchGetItem, PutItem, UpdateItem, DeleteItem, Query and BatchWriteItem
only: never a Scan. Listing uses the executions table's GSIs (the status and workflow indexes are
KEYS_ONLY, so a listing reads its page of items with BatchGetItem), the flow control sweep the
coordination table's due-index. Exactly-once writes are conditional; a failed condition becomes the
engine's own outcome (False, None or SequenceConflict).

Item layout (bulk data under short attribute names to keep items small and cheap):
- executions: contextKey, instanceId, domain, workflowId, subjectId, status, createdAt, updatedAt (the
  keys of the table and its indexes), and nm (execution name), in/inR (input, is-reference), rs/rsR
  (result), er (error JSON), end (ended at), pe/po (parent execution/operation), ttl (last of the
  execution's items: stepwell.core.log_expiry.NAME_HOLD_SECONDS), cv (the worker
  version it runs or ran on) and pinnedVersion (= cv until it ends, paused too: the sparse version-index's
  key), tg (tags, a map), ck (the secret its callback ids are derived from), pa (its pause while PAUSING or
  PAUSED: rt request time, tp timeout paused, rs reason, pt paused at), ra (its last resume: rt, rs), pd
  (the seconds pauses extend its timeout by), fl (its flow limits) and tr (its trace header). status,
  workflowId, pinnedVersion and domain carry a shard suffix "#<k>" past shard 0 (shards.py). Per tag an
  entry item: contextKey "<domain>#~tag#<key>#<value>" (no workflow name has '~', tag keys and values no
  '#'; "#<k>" past shard 0), instanceId "<createdAt ms:015>#<execution id>", ts (its shard, past 0), ttl
  once it ended.
  Per SKIP schedule a pointer item: contextKey "<domain>#~schedule#<schedule>", instanceId "pointer", eid
  (the last execution the schedule started), ttl (SCHEDULE_POINTER_HOLD_SECONDS past the last occurrence
  that claimed or kept it); no attribute an index keys on, so no index holds it.
  In sweep mode (due_wakeups.py) per long wait a due item: contextKey "~due#<hour bucket>#<shard of 32>",
  instanceId "<due epoch ms:014>#<execution id>", eid, due; and the sweep's state: contextKey "~due#sweep",
  instanceId "state", per shard k w<k> (watermark bucket) and lo<k>/lx<k> (its sweep lease's owner and
  expiry). In no index.
- operations: executionId, sk = "b#<seq:012>" for a batch (b body, or bd the body deflated with a preset
  dictionary when it is over DEFLATE_MIN_BYTES, bz without one as engines before v18 wrote it; bR
  is-reference, t created, x terminal; ttl Batch.expires_at: see stepwell.core.log_expiry) or "in#<input id>"
  for an external input (k kind, t created, op, p/pR payload, er error JSON).
- coordination: key = "lease#<id>", one record per execution (o owner and exp expiry while leased, eid,
  w the wake-up its last run armed, n the log's next seq as that run left it, ln the log's length the
  last run that knew it recorded, mv the version an upgrade moved it to, pb (or pz, deflated as `bd`
  is)/ps/pt the body, seq and time of the batch a suspending run (or the end) carried on its release
  instead of the log; in no index,
  so taking and dropping the lease cost one write unit each; when the execution ends it keeps only eid,
  the end it may carry, and a ttl (a retention period), so a late message's lease is never its first:
  Lease.never_held), "cb#<callback id>" (eid, op, v the worker version whose run
  created it; done and ttl once completed or timed out; a completion's result: k kind, p/pR payload, er
  error JSON, read back by the worker). Flow control (scopes are FlowLimit.scope): a concurrency key
  "fc#c#<digest>" (holders: a map of execution id -> lease expiry, head, tail, labels, while its queue is
  not empty dueShard flow#N and dueAt = its sweep time, and ttl while nobody holds or waits), its tickets
  "fc#c#<digest>#t#<n>" (eid, or skipped + ttl), a rate key "fc#r#<digest>" (starts, v version, labels,
  ttl: a retention period after its last start leaves the window) and per rate-limited execution
  "fc#x#<digest of its id>" (eid, startAt, ttl).

Safety net: a string value larger than `inline_limit` bytes that the engine did not already offload is
put on S3 by this store (when it has a payload store) and read back transparently.

One module per concern of the port (stepwell.ports), each a class on the shared tables (tables.py):
executions, versions, schedule_pointers, log, coordination, flow_control; DynamoDbExecutionStore is all of
them. due_wakeups.py is the due wake-ups port, apart (stepwell.wiring.long_waits builds it); shards.py the
shard suffix and the merge of one Query per read shard. items.py writes and reads the attribute values.
"""

from __future__ import annotations

from stepwell.aws.dynamodb_store.coordination import DynamoDbCoordination
from stepwell.aws.dynamodb_store.executions import DynamoDbExecutions, tag_entry_partition
from stepwell.aws.dynamodb_store.flow_control import DynamoDbFlowControl, due_shard
from stepwell.aws.dynamodb_store.log import DynamoDbOperationLog, batch_key
from stepwell.aws.dynamodb_store.schedule_pointers import DynamoDbSchedulePointers, schedule_pointer_key
from stepwell.aws.dynamodb_store.tables import DEFAULT_INLINE_LIMIT
from stepwell.aws.dynamodb_store.versions import DynamoDbVersionPins

__all__ = [
    "DEFAULT_INLINE_LIMIT",
    "DynamoDbExecutionStore",
    "batch_key",
    "due_shard",
    "schedule_pointer_key",
    "tag_entry_partition",
]


class DynamoDbExecutionStore(
    DynamoDbExecutions,
    DynamoDbVersionPins,
    DynamoDbSchedulePointers,
    DynamoDbOperationLog,
    DynamoDbCoordination,
    DynamoDbFlowControl,
):
    """ExecutionStore on the executions, operations and coordination tables."""
