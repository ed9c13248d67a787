"""How a batch body is packed where it is stored: deflated with a preset dictionary of the batch format.

The DynamoDB store keeps log batches (`bd`) and the batch a coordination record carries (`pz`) this way;
the engine sizes a carried batch by its packed length (Engine.carry_or_append_journal), since the record
must stay within one write unit.
"""

from __future__ import annotations

import zlib

# A body over this size is stored deflated when that is smaller: a DynamoDB write unit is 1 KB of item (a
# read unit 4 KB), and the JSON of operations and history events deflates to a fifth to a third with the
# dictionary below.
DEFLATE_MIN_BYTES = 256
# The preset dictionary (raw deflate, RFC 1951): the keys and values every batch repeats (the journal's
# stored format), the most frequent last. Stored items depend on these exact bytes: another dictionary
# needs other attribute names.
BODY_DICTIONARY = "".join(
    (
        '{"t":"ChainedInvokeStarted","s":,"o":0,"d":{"FunctionName":"","ExecutedVersion":"$LATEST"}}',
        '{"t":"ChainedInvokeSucceeded","s":,"o":0,"r":1,"d":{"Result":{"Truncated":false}}}',
        '{"t":"StepFailed","s":,"o":0,"d":{"Error":{"Payload":{"ErrorType":"","ErrorMessage":""}},',
        '"RetryDetails":{"CurrentAttempt":1,"NextAttemptDelaySeconds":1}}}',
        '{"t":"ExecutionSucceeded","s":,"d":{"Result":{"Payload":"","Truncated":false}}},"z":1,"r":"',
        '{"t":"ExecutionStarted","s":,"d":{"Input":{"Payload":"{}"}},"v":"',
        '{"Id":"","Type":"EXECUTION","Status":"STARTED","StartTimestamp":,"ExecutionDetails":{"InputPayload":',
        '{"t":"CallbackStarted","s":,"o":0,"d":{"CallbackId":"cb"}},{"t":"CallbackSucceeded","s":,"o":0,"r":1,',
        '"Type":"CALLBACK","Status":"STARTED","SubType":"Callback","CallbackDetails":{"CallbackId":"cb',
        '"SubType":"WaitForCallback","ContextDetails":{"Result":"',
        '{"t":"WaitStarted","s":,"o":0,"d":{"Duration":,"ScheduledEndTimestamp":}},',
        '{"t":"WaitSucceeded","s":,"o":0,"d":{"Duration":}},{"duration":',
        '"Type":"WAIT","Status":"STARTED","SubType":"Wait","WaitDetails":{"ScheduledEndTimestamp":',
        '"Type":"WAIT","Status":"SUCCEEDED","Name":"","StartTimestamp":,"EndTimestamp":,"SubType":"Wait",',
        '{"t":"InvocationCompleted","s":,"d":{"StartTimestamp":,"EndTimestamp":,"RequestId":""}}],"c":0,',
        '{"t":"ContextStarted","s":,"o":},{"t":"ContextSucceeded","s":,"o":,"r":1,"d":{"Result":{}}},',
        '"Type":"CONTEXT","Status":"STARTED","SubType":"Parallel","SubType":"Map","SubType":"ParallelBranch",',
        '"Type":"CONTEXT","Status":"SUCCEEDED","ParentId":"","Name":"","StartTimestamp":,"EndTimestamp":,',
        '"SubType":"ParallelBranch","ContextDetails":{"Result":""}},',
        '{"t":"StepStarted","s":,"o":},{"t":"StepSucceeded","s":,"o":,"r":1,"d":{"Result":{"Truncated":false},',
        '"RetryDetails":{"CurrentAttempt":1}}}',
        '{"Id":"","Type":"STEP","Status":"SUCCEEDED","ParentId":"","Name":"","StartTimestamp":,',
        '"EndTimestamp":,"SubType":"Step","StepDetails":{"Attempt":1,"Result":""}}],"e":[',
        '"w":1}',
    )
).encode("utf-8")


def deflate_body(body: str, max_bytes: int | None = None) -> bytes | None:
    """`body` deflated, when it is long enough to be worth it (and at most `max_bytes` long: longer ones go
    elsewhere) and comes out smaller; None otherwise (keep the text)."""
    raw = body.encode("utf-8")
    if len(raw) <= DEFLATE_MIN_BYTES or (max_bytes is not None and len(raw) > max_bytes):
        return None
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15, zdict=BODY_DICTIONARY)
    packed = deflate.compress(raw) + deflate.flush()
    return packed if len(packed) < len(raw) else None


def inflate_body(packed: bytes) -> str:
    """The text deflate_body packed."""
    inflate = zlib.decompressobj(-15, zdict=BODY_DICTIONARY)
    return (inflate.decompress(packed) + inflate.flush()).decode("utf-8")


def packed_size(body: str) -> int:
    """Bytes `body` takes where it is stored: deflated, or its text."""
    packed = deflate_body(body)
    return len(packed) if packed is not None else len(body.encode("utf-8"))
