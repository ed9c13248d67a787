"""Large payloads on S3: anything too big for a DynamoDB item (kept under 350 KB) or a queue message.

Objects are content-addressed inside an execution's folder (`ex/<hash of id>/<label>-<digest>`), so a
retried or duplicated write puts the same object again and a stale writer cannot clobber anything.
Deleting an execution's payloads is a listing of its folder.

Retention: objects are written untagged and the bucket's lifecycle rule expires only objects tagged
`stepwell-retention=ended`, so a running execution's payloads never expire, however long it waits. When
the execution ends, `retire` copies each of its objects onto itself with that tag: the copy is a new
object, and S3 counts expiry days from an object's creation, so they expire `retention_days` after the
end, as the tables' items do (their TTL also starts at the end).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from stepwell.errors import PayloadMissing

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import ObjectIdentifierTypeDef

# A reference stored in place of an offloaded value starts with this scheme.
REFERENCE_SCHEME = "s3ref:"
# The tag the bucket's lifecycle rule filters on (modules/payloads): only ended executions' objects expire.
RETENTION_TAG_KEY = "stepwell-retention"
RETENTION_TAG_ENDED = "ended"
_LABEL_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


class PayloadError(RuntimeError):
    """A payload reference is malformed."""


class PayloadObjectMissing(PayloadError, PayloadMissing):
    """A payload reference's object is not in the bucket."""


def execution_folder(execution_id: str) -> str:
    """The S3 folder of one execution's payloads (execution ids contain '#' and '/': hash them)."""
    if not execution_id:
        raise ValueError("execution_id must be a non-empty string")
    return "ex/" + hashlib.sha256(execution_id.encode("utf-8")).hexdigest()[:32] + "/"


class S3PayloadStore:
    """Puts and gets payload bytes in the module's bucket."""

    def __init__(self, s3: S3Client, bucket: str) -> None:
        if not bucket:
            raise ValueError("a payload bucket name is required to offload large payloads")
        self._s3 = s3
        self.bucket = bucket

    @staticmethod
    def _key(execution_id: str, label: str, data: bytes) -> str:
        if not label or not set(label) <= _LABEL_CHARACTERS:
            raise ValueError(f"payload label {label!r} must be non-empty and use only [A-Za-z0-9-_.]")
        digest = hashlib.sha256(data).hexdigest()[:32]
        return f"{execution_folder(execution_id)}{label}-{digest}"

    def put_bytes(self, execution_id: str, label: str, data: bytes) -> str:
        """Store `data` and return its reference (`s3ref:<key>`)."""
        key = self._key(execution_id, label, data)
        self._s3.put_object(Bucket=self.bucket, Key=key, Body=data)
        return REFERENCE_SCHEME + key

    def get_bytes(self, reference: str) -> bytes:
        """Read back the bytes a reference names."""
        key = reference_key(reference)
        try:
            response = self._s3.get_object(Bucket=self.bucket, Key=key)
        except self._s3.exceptions.NoSuchKey as error:
            raise PayloadObjectMissing(
                f"payload {reference!r} is missing from bucket {self.bucket!r}"
            ) from error
        body: bytes = response["Body"].read()
        return body

    def put(self, execution_id: str, label: str, data: str) -> str:
        """Store text (the engine's PayloadStore port) and return its reference."""
        return self.put_bytes(execution_id, label, data.encode("utf-8"))

    def get(self, reference: str) -> str:
        return self.get_bytes(reference).decode("utf-8")

    def reference(self, execution_id: str, label: str, data: str) -> str:
        """The reference `put` returns for this text, without writing anything (no request)."""
        return REFERENCE_SCHEME + self._key(execution_id, label, data.encode("utf-8"))

    def _pages_of_keys(self, execution_id: str) -> Iterator[list[str]]:
        """The keys of one execution's objects, a listing page at a time (a prefix, never a bucket scan)."""
        paginator = self._s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=execution_folder(execution_id)):
            keys = [item["Key"] for item in page.get("Contents", []) if "Key" in item]
            if keys:
                yield keys

    def delete_execution(self, execution_id: str) -> int:
        """Delete every payload of one execution; returns how many objects were deleted."""
        deleted = 0
        for keys in self._pages_of_keys(execution_id):
            objects: list[ObjectIdentifierTypeDef] = [{"Key": key} for key in keys]
            self._s3.delete_objects(Bucket=self.bucket, Delete={"Objects": objects, "Quiet": True})
            deleted += len(keys)
        return deleted

    def retire(self, execution_id: str) -> int:
        """Start the retention of an ended execution's payloads (see the module docstring); returns how
        many objects were retired. Idempotent: retiring again only restarts their retention."""
        retired = 0
        for keys in self._pages_of_keys(execution_id):
            for key in keys:
                # A copy onto itself must change the metadata (S3 refuses an unchanged copy); REPLACE
                # also drops any user metadata, which the engine never sets.
                self._s3.copy_object(
                    Bucket=self.bucket,
                    Key=key,
                    CopySource={"Bucket": self.bucket, "Key": key},
                    MetadataDirective="REPLACE",
                    Metadata={RETENTION_TAG_KEY: RETENTION_TAG_ENDED},
                    TaggingDirective="REPLACE",
                    Tagging=f"{RETENTION_TAG_KEY}={RETENTION_TAG_ENDED}",
                )
                retired += 1
        return retired


def is_reference(value: object) -> bool:
    return isinstance(value, str) and value.startswith(REFERENCE_SCHEME)


def reference_key(reference: str) -> str:
    if not is_reference(reference) or len(reference) == len(REFERENCE_SCHEME):
        raise PayloadError(f"{reference!r} is not a payload reference (expected '{REFERENCE_SCHEME}<key>')")
    return reference[len(REFERENCE_SCHEME) :]
