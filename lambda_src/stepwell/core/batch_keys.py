"""The keys of a log batch's body, as stored: one or two letters each, so a step's batch stays under one
DynamoDB write unit. Stored items depend on these exact strings (and stepwell.core.batch_codec's preset
dictionary repeats them): a new meaning takes a new key, never an old one.

A body is a JSON object (stepwell.core.batch_body): the operations and history events the batch records and
the execution-wide facts it changes; a key is left out when the batch changes nothing it names.
"""

from __future__ import annotations

# --- the body's keys

OPERATIONS = "o"  # the operations the batch changed: the SDK's Operation JSON, times in epoch ms
EVENTS = "e"  # its history events, compact (the event keys below), in EventId order
ABSORBED_INPUTS = "i"  # ids of the external inputs (`in#` items) it took in, deleted after it
PRIVATE_STATE = "d"  # what the SDK does not see, by operation id: wait durations, callback deadlines, targets
NEEDS_INVOCATION = "w"  # 1: the execution still needs an invocation after the batch; 0: it waits or ended
CONSECUTIVE_CRASHES = "c"  # invocations that crashed in a row, by a batch that holds an InvocationCompleted
ENDED = "z"  # 1: the batch ends the execution
RESULT = "r"  # the execution's result payload (its EXECUTION operation succeeded)
ERROR = "x"  # the execution's error object (its EXECUTION operation failed)
INPUT_REF = "ir"  # the payload store's reference of the execution input, stored in the input's place
CODE_VERSION = "v"  # the worker version the execution runs on from this batch on (written when it changes)
EXECUTION_TIMEOUT = "to"  # the workflow's execution timeout in seconds when the execution started
PAYLOAD_OBJECTS = "po"  # 1: an input it absorbed had its payload in an object of the payload store
CLIENT_TOKEN = "ck"  # the ClientToken of the remote function's checkpoint that wrote it, for a retry's answer

# --- the keys of an event in EVENTS

EVENT_TYPE = "t"  # the EventType (StepStarted, WaitSucceeded, ...)
EVENT_STAMP = "s"  # the EventTimestamp, epoch ms
EVENT_OPERATION = "o"  # the position of the event's operation in the batch's OPERATIONS
EVENT_IDENTITY = "id"  # Id, Name, SubType, ParentId of an operation the batch did not change
EVENT_DETAILS = "d"  # the event's details (the `<EventType>Details` of GetDurableExecutionHistory)
EVENT_RESULT_OF_OPERATION = "r"  # 1: its Result.Payload is its operation's stored result, not repeated
