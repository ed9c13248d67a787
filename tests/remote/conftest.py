"""Fixtures of the remote durable functions' tests (tests/remote/harness.py)."""
