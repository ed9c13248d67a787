"""The page token of a DynamoDB listing: opaque to the caller, it names the listing it continues and holds
the Query's LastEvaluatedKey, so the next page starts there. One codec for every store that pages a Query
(the execution store, the definitions' context store).

A token is base64url (no padding) of compact JSON {"l": listing, "k": key}; a listing is the store's own
text for the Query (its index and key values). Decoding refuses, with InvalidPageToken (an
InvalidArgument) and a message that says why, a token over MAX_PAGE_TOKEN_CHARS, one that does not decode
to that shape (garbled, truncated, JSON nested too deeply, a key that is not DynamoDB string or number
attributes) and one another listing returned.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from stepwell.errors import InvalidArgument

# Tokens the stores return hold keys made of ids (at most 128 characters) and tag values (256): a few KB
# at most, even with every character escaped. A longer one is refused before it is decoded.
MAX_PAGE_TOKEN_CHARS = 64 * 1024
# A refused token is quoted in the message up to this many characters.
_SHOWN_CHARS = 80


class InvalidPageToken(InvalidArgument):
    """A page token no listing of this store returned, or one another listing returned."""


def encode_page_token(listing: str, last_key: Mapping[str, Any]) -> str:
    """An opaque token: which listing it continues and DynamoDB's LastEvaluatedKey."""
    data = json.dumps({"l": listing, "k": last_key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode_page_token(listing: str, token: object) -> dict[str, Any]:
    """The ExclusiveStartKey that continues `listing`; InvalidPageToken if it did not return `token`."""
    if isinstance(token, str) and len(token) > MAX_PAGE_TOKEN_CHARS:
        raise InvalidPageToken(
            f"page token {_shown(token)} is not one this store returned: {len(token):,} characters, "
            f"tokens are at most {MAX_PAGE_TOKEN_CHARS:,}"
        )
    refused = f"page token {_shown(token)} is not one this store returned"
    if not isinstance(token, str):
        raise InvalidPageToken(refused)
    try:
        padded = token + "=" * (-len(token) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, RecursionError) as error:  # RecursionError: JSON nested too deeply
        raise InvalidPageToken(refused) from error
    if not isinstance(value, dict) or not isinstance(value.get("k"), dict):
        raise InvalidPageToken(refused)
    if value.get("l") != listing:
        raise InvalidPageToken(
            f"page token {_shown(token)} does not belong to this listing (pass the token the same query "
            "returned)"
        )
    start_key: dict[str, Any] = value["k"]
    if not start_key or not all(_is_key_attribute(attribute) for attribute in start_key.values()):
        raise InvalidPageToken(refused)
    return start_key


def _is_key_attribute(attribute: object) -> bool:
    """A key attribute as DynamoDB returns it here: {"S": text} or {"N": digits as text}."""
    if not isinstance(attribute, dict) or len(attribute) != 1:
        return False
    kind, value = next(iter(attribute.items()))
    return kind in ("S", "N") and isinstance(value, str)


def _shown(token: object) -> str:
    text = repr(token)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."
