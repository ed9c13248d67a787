"""The page token of a DynamoDB listing: opaque to the caller, it names the listing it continues and holds
the Query's LastEvaluatedKey, so the next page starts there. One codec for every store that pages a Query
(the execution store, the definitions' context store).

A token is base64url (no padding) of compact JSON {"l": listing, "k": key}; a listing is the store's own
text for the Query (its index and key values). A listing that merges one Query per index shard
(stepwell.aws.dynamodb_store.shards) returns {"l": listing, "p": positions} instead: per shard, null (not
read yet), "-" (done) or the key of the last item the pages took from it. Decoding refuses, with
InvalidPageToken (an InvalidArgument) and a message that says why, a token over MAX_PAGE_TOKEN_CHARS, one
that does not decode to that shape (garbled, truncated, JSON nested too deeply, a key that is not DynamoDB
string or number attributes) and one another listing returned.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
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
    value = _decoded(token)
    if not isinstance(value.get("k"), dict):
        raise InvalidPageToken(f"page token {_shown(token)} is not one this store returned")
    if value.get("l") != listing:
        raise InvalidPageToken(
            f"page token {_shown(token)} does not belong to this listing (pass the token the same query "
            "returned)"
        )
    return _start_key(token, value["k"])


def encode_shard_token(listing: str, positions: Sequence[Mapping[str, Any] | str | None]) -> str:
    """An opaque token of a merged listing: which listing it continues and where each shard stopped."""
    data = json.dumps({"l": listing, "p": list(positions)}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode_shard_token(listing: str, token: object, shards: int) -> list[dict[str, Any] | str | None]:
    """Where each of `shards` shards of `listing` stopped; InvalidPageToken if `listing` over that many
    shards did not return `token`. A token of the single Query listings returned before sharding continues
    a listing of one shard; with more, it is refused (list again from the first page)."""
    value = _decoded(token)
    if value.get("l") != listing:
        raise InvalidPageToken(
            f"page token {_shown(token)} does not belong to this listing (pass the token the same query "
            "returned)"
        )
    if "p" not in value and isinstance(value.get("k"), dict):
        if shards != 1:
            raise InvalidPageToken(
                f"page token {_shown(token)} was returned before the listing was sharded; the index now has "
                f"{shards} shards: list again from the first page"
            )
        return [_start_key(token, value["k"])]
    positions = value.get("p")
    if not isinstance(positions, list):
        raise InvalidPageToken(f"page token {_shown(token)} is not one this store returned")
    if len(positions) != shards:
        raise InvalidPageToken(
            f"page token {_shown(token)} was returned when the index had {len(positions)} shards; it has "
            f"{shards} now (the shard count changed): list again from the first page"
        )
    decoded: list[dict[str, Any] | str | None] = []
    for position in positions:
        if position is None or position == "-":
            decoded.append(position)
        elif isinstance(position, dict):
            decoded.append(_start_key(token, position))
        else:
            raise InvalidPageToken(f"page token {_shown(token)} is not one this store returned")
    if all(position == "-" for position in decoded):  # a listing that ended returns no token
        raise InvalidPageToken(f"page token {_shown(token)} is not one this store returned")
    return decoded


def _decoded(token: object) -> dict[str, Any]:
    """The JSON object a token encodes (bounded, base64url of JSON); InvalidPageToken otherwise."""
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
    if not isinstance(value, dict):
        raise InvalidPageToken(refused)
    return value


def _start_key(token: object, key: dict[str, Any]) -> dict[str, Any]:
    if not key or not all(_is_key_attribute(attribute) for attribute in key.values()):
        raise InvalidPageToken(f"page token {_shown(token)} is not one this store returned")
    return key


def _is_key_attribute(attribute: object) -> bool:
    """A key attribute as DynamoDB returns it here: {"S": text} or {"N": digits as text}."""
    if not isinstance(attribute, dict) or len(attribute) != 1:
        return False
    kind, value = next(iter(attribute.items()))
    return kind in ("S", "N") and isinstance(value, str)


def _shown(token: object) -> str:
    text = repr(token)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."
