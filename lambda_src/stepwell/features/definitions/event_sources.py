"""Which EventBridge event sources may speak for which domains (the module's `event_sources`, JSON in
STEPWELL_EVENT_SOURCES): a domain is an authenticated fact, not a claim, so the router accepts a bus event
only when its `source` (and, for a key "<account>:<source>", its `account`) may speak for the domain the
event maps to."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from stepwell.features.definitions.ids import InvalidId, check_id

SOURCE_RULE = "letters, digits and . _ / - (1-256, starting with a letter or digit)"
DOMAIN_PATTERN_RULE = "a domain id, a prefix ending in '*' (e.g. 'acme-*'), or '*' for every domain"
_SOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$")
_ACCOUNT_KEY = re.compile(r"^([0-9]{12}):(.+)$")


class EventSourcesError(ValueError):
    """The event sources configuration holds a bad key or domain."""


class EventSources:
    """Which bus event sources may speak for which domains.

    Keys are an event `source` or "<12-digit account>:<source>" (then the envelope's `account` must match
    too); values list domain ids, prefixes ending in "*" or "*" (every domain). A source can be trusted
    only as far as IAM restricts who may put events with it (the `events:source` condition key)."""

    def __init__(self, rules: Mapping[str, Any] | None = None) -> None:
        # (account or None, source) -> domain patterns
        self._rules: dict[tuple[str | None, str], tuple[str, ...]] = {}
        for key, domains in (rules or {}).items():
            if not isinstance(key, str):
                raise EventSourcesError(f"event source {key!r} must be a string")
            bound = _ACCOUNT_KEY.match(key)
            account, source = (bound.group(1), bound.group(2)) if bound else (None, key)
            if not _SOURCE.match(source):
                raise EventSourcesError(
                    f"event source {key!r}: {SOURCE_RULE}, optionally after '<12-digit account>:'"
                )
            if not isinstance(domains, list | tuple) or not domains:
                raise EventSourcesError(
                    f"event source {key!r}: domains must be a non-empty list of {DOMAIN_PATTERN_RULE}"
                )
            for pattern in domains:
                _check_domain_pattern(key, pattern)
            self._rules[(account, source)] = tuple(domains)

    def refusal(self, source: object, account: object, domain: str) -> str | None:
        """Why an event from `source` (put by `account`) may not speak for `domain`; None when it may."""
        if not self._rules:
            return (
                f"no event sources are configured, so no bus event may speak for domain {domain!r} "
                "(set the module's event_sources)"
            )
        allowed = [
            pattern
            for (bound, rule_source), patterns in self._rules.items()
            if rule_source == source and (bound is None or bound == account)
            for pattern in patterns
        ]
        if not allowed:
            return f"source {source!r} (account {account!r}) is not in event_sources"
        if any(_domain_matches(pattern, domain) for pattern in allowed):
            return None
        return f"source {source!r} may not speak for domain {domain!r} (allowed: {', '.join(allowed)})"


def _check_domain_pattern(key: str, pattern: object) -> None:
    if pattern == "*":
        return
    text = pattern[:-1] if isinstance(pattern, str) and pattern.endswith("*") else pattern
    try:
        check_id("domain", text)
    except InvalidId as error:
        raise EventSourcesError(
            f"event source {key!r}: {pattern!r} is not {DOMAIN_PATTERN_RULE} ({error})"
        ) from None


def _domain_matches(pattern: str, domain: str) -> bool:
    return domain.startswith(pattern[:-1]) if pattern.endswith("*") else domain == pattern
