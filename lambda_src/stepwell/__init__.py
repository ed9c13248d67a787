"""Stepwell: a durable execution engine for AWS Durable Execution SDK handlers on plain Lambda."""

__version__ = "0.1.0"
