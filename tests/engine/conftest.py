"""Engine tests run in-process on the local backend (memory store, virtual clock)."""

from stepwell.testing.local_fixtures import stepwell_local

__all__ = ["stepwell_local"]
