"""How a case's handler module is registered: the local backend calls this, and the deployed package
carries a copy of this file (deployed_backend.write_conformance_workflows), so both register the same way.

A handler module exposes `handler` (registered under the name the backend gives the case) and optionally
`WORKFLOWS = {name: durable handler}`, `WORKFLOW_OPTIONS = {name: {"execution_timeout": seconds}}` (the
registry's keyword options for one of those workflows) and `FUNCTIONS = {name: fn(event, lambda_context)}`
(plain functions, the targets of `context.invoke` that are not durable).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any


def register_case_module(
    module: ModuleType,
    name: str,
    register: Callable[..., Any],
    register_function: Callable[[str, Callable[..., Any]], Any],
) -> None:
    workflows: dict[str, Any] = dict(getattr(module, "WORKFLOWS", {}))
    options: dict[str, dict[str, Any]] = dict(getattr(module, "WORKFLOW_OPTIONS", {}))
    unknown = sorted(set(options) - set(workflows))
    if unknown:
        raise ValueError(
            f"{module.__name__}: WORKFLOW_OPTIONS names {unknown}, which are not in WORKFLOWS "
            f"(it may only set options of the module's WORKFLOWS: {sorted(workflows)})"
        )
    register(name, module.handler)
    for workflow_name, workflow_handler in workflows.items():
        register(workflow_name, workflow_handler, **options.get(workflow_name, {}))
    for function_name, function in dict(getattr(module, "FUNCTIONS", {})).items():
        register_function(function_name, function)
