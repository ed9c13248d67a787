"""S3 lifecycle expiration for local backends, which store a bucket's lifecycle rules but never run them.

``BucketLifecycle`` reads the bucket's real configuration (GetBucketLifecycleConfiguration) and expires
objects by it on the harness's virtual clock, so a test that skips 31 days sees what S3 would have
deleted by then. Expiration follows S3: an enabled rule whose filter matches the object (prefix, tags,
size bounds, or all of them in ``And``) expires it at its creation plus ``Days``, rounded up to the next
midnight UTC, or on ``Date``. An object's creation is when it was written (a copy onto itself creates
it anew) on the virtual clock: every clock change first notes the objects written since the previous
one, at the clock's previous reading, then expires what is due.

Simplifications: versioning is not emulated (an expired object is deleted); a rewrite with the same
content and tags within the same second as the previous write is not seen as a new creation; transitions
and noncurrent-version rules are ignored.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from stepwell.aws.clients import error_code
from stepwell.testing.scheduler import VirtualClock


@dataclass(frozen=True)
class ExpirationRule:
    """One enabled lifecycle rule that expires current objects."""

    rule_id: str
    prefix: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)
    size_greater_than: int | None = None
    size_less_than: int | None = None
    days: int | None = None
    date: datetime | None = None

    @classmethod
    def from_api(cls, rule: Mapping[str, Any]) -> ExpirationRule | None:
        """The rule as GetBucketLifecycleConfiguration returns it; None when it expires nothing."""
        expiration = rule.get("Expiration") or {}
        if rule.get("Status") != "Enabled" or not ("Days" in expiration or "Date" in expiration):
            return None
        found = rule.get("Filter") or {}
        conditions = found.get("And", found)
        tags = {tag["Key"]: tag["Value"] for tag in conditions.get("Tags", [])}
        if "Tag" in found:
            tags[found["Tag"]["Key"]] = found["Tag"]["Value"]
        date = expiration.get("Date")
        return cls(
            rule_id=str(rule.get("ID", "")),
            # The deprecated top-level Prefix still filters when there is no Filter.
            prefix=str(conditions.get("Prefix", rule.get("Prefix", ""))),
            tags=tags,
            size_greater_than=conditions.get("ObjectSizeGreaterThan"),
            size_less_than=conditions.get("ObjectSizeLessThan"),
            days=int(expiration["Days"]) if "Days" in expiration else None,
            date=date if isinstance(date, datetime) else None,
        )

    def matches(self, key: str, size: int, tags: Mapping[str, str]) -> bool:
        if not key.startswith(self.prefix):
            return False
        if any(tags.get(name) != value for name, value in self.tags.items()):
            return False
        if self.size_greater_than is not None and size <= self.size_greater_than:
            return False
        return self.size_less_than is None or size < self.size_less_than

    def expires_at(self, created: datetime) -> datetime:
        """When S3 expires an object created at ``created`` under this rule."""
        if self.days is None:
            assert self.date is not None  # from_api keeps only rules with Days or Date
            return self.date
        due = created.astimezone(UTC) + timedelta(days=self.days)
        midnight = due.replace(hour=0, minute=0, second=0, microsecond=0)
        return midnight if midnight == due else midnight + timedelta(days=1)


@dataclass
class _Reading:
    """The clock from one change to the next: a real moment and what the clock added to real time."""

    real: datetime
    offset: timedelta
    frozen_at: datetime | None

    def virtual(self, real: datetime, until: datetime) -> datetime:
        """The virtual time of a real moment in [self.real, until] (clamped: S3 keeps whole seconds)."""
        if self.frozen_at is not None:
            return self.frozen_at
        return min(max(real, self.real), until) + self.offset


@dataclass
class _Seen:
    version: tuple[str, datetime, frozenset[tuple[str, str]]]  # ETag, LastModified, tags
    created: datetime  # on the virtual clock
    size: int


class BucketLifecycle:
    """Applies one bucket's lifecycle expiration on a virtual clock (see the module docstring)."""

    def __init__(self, s3: Any, bucket: str, clock: VirtualClock) -> None:
        self._s3 = s3
        self.bucket = bucket
        self.clock = clock
        self.rules = self.load_rules()
        self._tagged = any(rule.tags for rule in self.rules)
        self._reading = self._read_clock()
        self._seen: dict[str, _Seen] = {}
        self.expired: list[str] = []
        self._observe()

    def load_rules(self) -> list[ExpirationRule]:
        try:
            response = self._s3.get_bucket_lifecycle_configuration(Bucket=self.bucket)
        except ClientError as error:
            if error_code(error) == "NoSuchLifecycleConfiguration":
                return []
            raise
        rules = (ExpirationRule.from_api(rule) for rule in response.get("Rules", []))
        return [rule for rule in rules if rule is not None]

    def _read_clock(self) -> _Reading:
        return _Reading(datetime.now(UTC), self.clock.offset, self.clock.frozen_at)

    def _observe(self) -> None:
        """Note the virtual creation time of every object (or new version of one) not seen before: it was
        written since the last clock change, while the clock read ``self._reading``. A copy onto itself
        within the same second and with the same content is told apart by its tags."""
        now_real = datetime.now(UTC)
        present: set[str] = set()
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
            for item in page.get("Contents", []):
                key, modified = item["Key"], item["LastModified"]
                present.add(key)
                tags = self._object_tags(key) if self._tagged else {}
                version = (str(item.get("ETag", "")), modified, frozenset(tags.items()))
                seen = self._seen.get(key)
                if seen is None or seen.version != version:
                    created = self._reading.virtual(modified, now_real)
                    self._seen[key] = _Seen(version, created, int(item.get("Size", 0)))
        for key in set(self._seen) - present:
            del self._seen[key]

    def _object_tags(self, key: str) -> dict[str, str]:
        tag_set = self._s3.get_object_tagging(Bucket=self.bucket, Key=key).get("TagSet", [])
        return {tag["Key"]: tag["Value"] for tag in tag_set}

    def apply(self) -> list[str]:
        """Delete every object whose expiry has come on the virtual clock; returns their keys."""
        self._observe()
        now = self.clock.now()
        expired: list[str] = []
        for key, seen in self._seen.items():
            tags = dict(seen.version[2])
            if any(
                rule.matches(key, seen.size, tags) and rule.expires_at(seen.created) <= now
                for rule in self.rules
            ):
                expired.append(key)
        for key in expired:
            self._s3.delete_object(Bucket=self.bucket, Key=key)
            del self._seen[key]
        self.expired.extend(expired)
        return expired

    def _clock_changed(self, clock: VirtualClock) -> None:
        # What was written before this change was written on the clock's previous reading.
        self._observe()
        self._reading = self._read_clock()
        self.apply()

    @contextlib.contextmanager
    def running(self) -> Iterator[BucketLifecycle]:
        """Expire objects whenever the clock changes (as S3 would in the background) until exit."""
        self.clock.listeners.append(self._clock_changed)
        try:
            yield self
        finally:
            self.clock.listeners.remove(self._clock_changed)
