"""The page-token codec the DynamoDB listings share (stepwell.aws.page_tokens): a token continues the
listing that returned it, and any other (from another listing, garbled, tampered, oversize, not text) is
refused with an InvalidArgument that says why."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from stepwell.aws.page_tokens import (
    MAX_PAGE_TOKEN_CHARS,
    InvalidPageToken,
    decode_page_token,
    decode_shard_token,
    encode_page_token,
    encode_shard_token,
)
from stepwell.errors import InvalidArgument

LISTING = 'subject-index|{":d": {"S": "acme"}, ":s": {"S": "s-1"}}'
KEY = {
    "contextKey": {"S": "acme#orders#s-1"},
    "instanceId": {"S": "i-42"},
    "domain": {"S": "acme"},
    "createdAt": {"N": "1800000000.5"},
}


def _raw(value: Any) -> str:
    """A token made by hand: base64url of any JSON, as a caller could send."""
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _tampered(change: Callable[[bytes], bytes]) -> str:
    """A token this listing returned with its JSON changed."""
    token = encode_page_token(LISTING, KEY)
    data = change(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def test_a_token_continues_its_listing() -> None:
    token = encode_page_token(LISTING, KEY)
    assert decode_page_token(LISTING, token) == KEY
    assert "=" not in token and "+" not in token and "/" not in token  # safe in a URL's query


def test_the_largest_token_a_store_returns_is_far_under_the_limit() -> None:
    # A tag listing's partition with the longest key and value (256 characters outside ASCII, each
    # escaped in JSON, twice in the listing): the limit leaves room.
    partition = "d" * 128 + "#~tag#" + "k" * 128 + "#" + "\U0001f600" * 256
    listing = f"tag|{partition}|RUNNING"
    key = {"contextKey": {"S": partition}, "instanceId": {"S": "t#" + "e" * 300}}
    token = encode_page_token(listing, key)
    assert len(token) * 4 < MAX_PAGE_TOKEN_CHARS
    assert decode_page_token(listing, token) == key


def test_a_token_from_another_listing_is_refused() -> None:
    token = encode_page_token("status-index|RUNNING", KEY)
    with pytest.raises(InvalidPageToken, match="does not belong to this listing") as raised:
        decode_page_token(LISTING, token)
    assert isinstance(raised.value, InvalidArgument)
    # The listing changed inside a token: another listing's token.
    with pytest.raises(InvalidPageToken, match="does not belong to this listing"):
        decode_page_token(LISTING, _tampered(lambda data: data.replace(b"s-1", b"s-2", 1)))


@pytest.mark.parametrize(
    "token",
    [
        "garbage!",
        "",
        encode_page_token(LISTING, KEY)[:-7],  # truncated
        _tampered(lambda data: data[:-1]),  # a brace gone
        _tampered(lambda data: data.replace(b'"k":{', b'"k":[')),
        _raw(["l", "k"]),
        _raw({"l": LISTING}),
        _raw({"l": LISTING, "k": "contextKey"}),
        _raw({"l": LISTING, "k": {}}),
        _raw({"l": LISTING, "k": {"contextKey": "acme#orders#s-1"}}),
        _raw({"l": LISTING, "k": {"contextKey": {"S": 7}}}),
        _raw({"l": LISTING, "k": {"contextKey": {"M": {"S": "x"}}}}),
        _raw({"l": LISTING, "k": {"contextKey": {"S": "a", "N": "1"}}}),
        base64.urlsafe_b64encode(b"[" * 20_000 + b"]" * 20_000).decode(),  # nested too deeply
        base64.urlsafe_b64encode(b"\xff\xfe not utf-8").decode(),
    ],
)
def test_a_garbled_or_tampered_token_is_refused(token: str) -> None:
    with pytest.raises(InvalidPageToken, match="is not one this store returned"):
        decode_page_token(LISTING, token)


def test_the_message_quotes_a_short_token_whole() -> None:
    with pytest.raises(InvalidPageToken, match=r"^page token 'garbage!' is not one this store returned$"):
        decode_page_token(LISTING, "garbage!")


def test_an_oversize_token_is_refused_before_decoding_and_not_quoted_whole() -> None:
    token = encode_page_token(LISTING, {"contextKey": {"S": "x" * MAX_PAGE_TOKEN_CHARS}})
    with pytest.raises(InvalidPageToken) as raised:
        decode_page_token(LISTING, token)
    message = str(raised.value)
    assert f"{len(token):,} characters, tokens are at most {MAX_PAGE_TOKEN_CHARS:,}" in message
    assert len(message) < 300


def test_a_token_at_the_limit_is_decoded() -> None:
    tokens = (encode_page_token(LISTING, {"contextKey": {"S": "x" * size}}) for size in range(48_000, 49_200))
    token = next(token for token in tokens if len(token) == MAX_PAGE_TOKEN_CHARS)
    assert decode_page_token(LISTING, token)["contextKey"]["S"].startswith("x")


@pytest.mark.parametrize("token", [5, None, b"abc", ["x"]])
def test_a_token_that_is_not_text_is_refused(token: object) -> None:
    with pytest.raises(
        InvalidPageToken, match=re.escape(f"page token {token!r} is not one this store returned")
    ):
        decode_page_token(LISTING, token)


def _raw(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def test_a_merged_listings_token_holds_each_shards_position() -> None:
    positions: list[Any] = [KEY, None, "-"]
    token = encode_shard_token(LISTING, positions)
    assert decode_shard_token(LISTING, token, 3) == positions
    with pytest.raises(InvalidPageToken, match="had 3 shards; it has 4 now"):
        decode_shard_token(LISTING, token, 4)
    with pytest.raises(InvalidPageToken, match="does not belong to this listing"):
        decode_shard_token("other", token, 3)


def test_a_token_from_before_sharding_continues_one_shard_and_is_refused_over_more() -> None:
    old = encode_page_token(LISTING, KEY)
    assert decode_shard_token(LISTING, old, 1) == [KEY]
    with pytest.raises(InvalidPageToken, match="before the listing was sharded"):
        decode_shard_token(LISTING, old, 2)


@pytest.mark.parametrize(
    "positions",
    [
        "not a list",
        [KEY, 7],  # neither a key, null nor "-"
        [KEY, {"contextKey": {"M": {}}}],  # not a key attribute
        [KEY, {}],  # an empty key
        ["-", "-"],  # a listing that ended returns no token
    ],
)
def test_a_merged_token_with_a_bad_position_is_refused(positions: object) -> None:
    with pytest.raises(InvalidPageToken, match="not one this store returned"):
        decode_shard_token(LISTING, _raw({"l": LISTING, "p": positions}), 2)
