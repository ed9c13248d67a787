"""The ids and sizes the definitions' stores accept, and the errors their checks raise.

Validation refuses a definition whose id the stores could not key, budgets size a run's values by these
limits, and the stores validate what they store through validation: so they live here, below all three
(in the store they made an import cycle)."""

from __future__ import annotations

from stepwell.model import KEY_PART_PATTERN, KEY_PART_RULE

MAX_ID_LENGTH = 128
RESERVED_PREFIX = "stepwell."
# A context's data as stored (compact JSON in ASCII, so its length is its size in bytes): the item holds it
# beside its waits, error and keys within DynamoDB's 400 KB, so it is checked before any write (both
# stores), and a too large value fails its context with this limit named, never DynamoDB's raw refusal.
MAX_CONTEXT_DATA_BYTES = 256 * 1024


class StoreError(ValueError):
    pass


class InvalidId(StoreError):
    """An id that is empty, too long, contains '#', or has characters the keys do not allow."""


def check_id(label: str, value: object) -> str:
    """Refuse ids that cannot be key parts, with a message naming the value and the rule."""
    if not isinstance(value, str):
        raise InvalidId(f"invalid {label} {value!r}: must be a string")
    if not value:
        raise InvalidId(f"invalid {label}: empty; {KEY_PART_RULE}")
    if "#" in value:
        raise InvalidId(f"invalid {label} {value!r}: must not contain '#' (it separates key parts)")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidId(
            f"invalid {label} {value[:40]!r}...: {len(value)} characters; at most {MAX_ID_LENGTH}"
        )
    if not KEY_PART_PATTERN.match(value):
        raise InvalidId(f"invalid {label} {value!r}: {KEY_PART_RULE}")
    return value


def check_workflow_id(value: object) -> str:
    """A definition's id: a key part (see check_id), not under the reserved prefix."""
    workflow_id = check_id("workflow id", value)
    if workflow_id.lower().startswith(RESERVED_PREFIX):
        # Contexts share the executions table with the interpreter's executions (workflow
        # "stepwell.definition"): a definition under that name would collide with them.
        raise InvalidId(
            f"invalid workflow id {workflow_id!r}: ids starting with {RESERVED_PREFIX!r} are reserved"
        )
    return workflow_id
