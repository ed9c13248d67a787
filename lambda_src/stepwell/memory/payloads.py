"""The in-memory backend of the payload port: objects in a dict, with references shaped like the S3
adapter's, and the retirement the S3 adapter does with tags."""

from __future__ import annotations

import hashlib
import threading

from stepwell.errors import PayloadMissing


class MemoryPayloadStore:
    """PayloadStore in a dict: references look like the S3 adapter's (`mem:<execution hash>/<label>`)."""

    def __init__(self) -> None:
        self._objects: dict[str, str] = {}
        # References whose execution has ended (the S3 adapter tags these for its lifecycle rule).
        self.retired: set[str] = set()
        self._lock = threading.Lock()

    def reference(self, execution_id: str, label: str, data: str) -> str:
        digest = hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]
        return f"{self._folder(execution_id)}{label}-{digest}"

    def put(self, execution_id: str, label: str, data: str) -> str:
        reference = self.reference(execution_id, label, data)
        with self._lock:
            self._objects[reference] = data
            self.retired.discard(reference)  # a write makes a new object, as on S3: not retired
        return reference

    def get(self, reference: str) -> str:
        with self._lock:
            data = self._objects.get(reference)
        if data is None:
            raise PayloadMissing(f"no payload stored under reference {reference!r}")
        return data

    def retire(self, execution_id: str) -> int:
        references = self.references(execution_id)
        with self._lock:
            self.retired.update(references)
        return len(references)

    def delete_execution(self, execution_id: str) -> int:
        references = self.references(execution_id)
        with self._lock:
            for reference in references:
                self._objects.pop(reference, None)
                self.retired.discard(reference)
        return len(references)

    def expire(self, reference: str) -> None:
        """Remove one object, as the bucket's lifecycle rule does once an ended execution's retention
        has passed (tests)."""
        with self._lock:
            self._objects.pop(reference, None)
            self.retired.discard(reference)

    def references(self, execution_id: str) -> list[str]:
        """The references of one execution's payloads (tests count and inspect them)."""
        folder = self._folder(execution_id)
        with self._lock:
            return sorted(reference for reference in self._objects if reference.startswith(folder))

    @staticmethod
    def _folder(execution_id: str) -> str:
        return "mem:" + hashlib.sha256(execution_id.encode("utf-8")).hexdigest()[:16] + "/"
