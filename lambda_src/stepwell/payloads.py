"""Large payloads on S3: anything too big for a DynamoDB item (kept under 350 KB) or a queue message.

Objects are content-addressed inside an execution's folder (`ex/<hash of id>/<label>-<digest>`), so a
retried or duplicated write puts the same object again and a stale writer cannot clobber anything.
Deleting an execution's payloads is a listing of its folder.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import ObjectIdentifierTypeDef

# A reference stored in place of an offloaded value starts with this scheme.
REFERENCE_SCHEME = "s3ref:"
_LABEL_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


class PayloadError(RuntimeError):
    """A payload reference is malformed or its object is missing."""


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

    def put_bytes(self, execution_id: str, label: str, data: bytes) -> str:
        """Store `data` and return its reference (`s3ref:<key>`)."""
        if not label or not set(label) <= _LABEL_CHARACTERS:
            raise ValueError(f"payload label {label!r} must be non-empty and use only [A-Za-z0-9-_.]")
        digest = hashlib.sha256(data).hexdigest()[:32]
        key = f"{execution_folder(execution_id)}{label}-{digest}"
        self._s3.put_object(Bucket=self.bucket, Key=key, Body=data)
        return REFERENCE_SCHEME + key

    def get_bytes(self, reference: str) -> bytes:
        """Read back the bytes a reference names."""
        key = reference_key(reference)
        try:
            response = self._s3.get_object(Bucket=self.bucket, Key=key)
        except self._s3.exceptions.NoSuchKey as error:
            raise PayloadError(f"payload {reference!r} is missing from bucket {self.bucket!r}") from error
        body: bytes = response["Body"].read()
        return body

    def put(self, execution_id: str, label: str, data: str) -> str:
        """Store text (the engine's PayloadStore port) and return its reference."""
        return self.put_bytes(execution_id, label, data.encode("utf-8"))

    def get(self, reference: str) -> str:
        return self.get_bytes(reference).decode("utf-8")

    def delete_execution(self, execution_id: str) -> int:
        """Delete every payload of one execution; returns how many objects were deleted."""
        prefix = execution_folder(execution_id)
        deleted = 0
        paginator = self._s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            keys: list[ObjectIdentifierTypeDef] = [{"Key": item["Key"]} for item in page.get("Contents", [])]
            if keys:
                self._s3.delete_objects(Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True})
                deleted += len(keys)
        return deleted


def is_reference(value: object) -> bool:
    return isinstance(value, str) and value.startswith(REFERENCE_SCHEME)


def reference_key(reference: str) -> str:
    if not is_reference(reference) or len(reference) == len(REFERENCE_SCHEME):
        raise PayloadError(f"{reference!r} is not a payload reference (expected '{REFERENCE_SCHEME}<key>')")
    return reference[len(REFERENCE_SCHEME) :]
