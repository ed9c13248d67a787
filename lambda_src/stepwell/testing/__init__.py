"""Test harness for Stepwell and for users' workflows: local backends, a local Lambda runtime,
a scheduler firer and pytest fixtures. Never shipped in the Lambda package; the engine never imports it."""
