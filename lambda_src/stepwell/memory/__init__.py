"""In-memory adapters: the ports implemented in one process, for tests and the local harness."""
