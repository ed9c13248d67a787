"""AWS's otel-execution and otel-long-running suites: every scenario (otel_scenarios.py) with the SDK's
execution-view plugin."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python_otel import ExecutionOtelPluginFactory

sys.path.insert(0, str(Path(__file__).resolve().parent))
from otel_scenarios import handler_module_attributes

globals().update(handler_module_attributes(ExecutionOtelPluginFactory))
