"""A local Lambda runtime for backends that store functions but never run them (moto).

moto marks functions Active, but its event source mappings never poll, its Invoke only echoes and its
function URLs serve nothing. ``LambdaRuntime`` runs each function version's deployed zip (Python, or
Node.js on the machine's ``node``) in warm worker processes, serves Lambda's Invoke API and function URLs
on 127.0.0.1, plays Event invokes with their destinations and drives the SQS event source mappings;
``BackendLambdaDriver`` offers the same surface over a backend that runs the code itself (LocalStack).
The modules, each with one job:

- ``runtime``: ``LambdaRuntime``, what tests and ``stepwell.testing`` use; ties the others together.
- ``functions``: a function version as it runs (``FunctionSpec``, its ``RuntimeKind``), an invocation's
  answer (``InvocationResult``), and FunctionName references as Lambda's Invoke takes them.
- ``worker``: the Python worker process that runs handler code, and the harness's handle on a worker.
- ``node_bootstrap.mjs``: the Node.js worker, speaking the same line protocol.
- ``invoke_config``: a version's event invoke config (retries, event age, destinations) as Event invokes
  play it.
- ``pool``: warm workers per version, and each version's code unpacked once.
- ``invoke_api``: the local endpoint: Invoke, function URLs, and a relay to the backend for the rest.
- ``function_url_payloads``: function URLs' payload format 2.0, request to event and result to answer.
- ``event_sources``: the SQS event source mappings and their queues, as Lambda's pollers run them.
- ``backend_driver``: ``BackendLambdaDriver``.
"""

from stepwell.testing.lambda_runtime.backend_driver import BackendLambdaDriver
from stepwell.testing.lambda_runtime.event_sources import DrainResult, EventSourceMapping
from stepwell.testing.lambda_runtime.function_url_payloads import function_url_event, function_url_response
from stepwell.testing.lambda_runtime.functions import (
    LATEST,
    NODE_RUNTIMES,
    ClientFactory,
    CodeFetcher,
    FunctionSpec,
    InvalidFunctionReference,
    InvocationResult,
    RuntimeKind,
    UnsupportedRuntime,
    runtime_kind,
    split_function_reference,
)
from stepwell.testing.lambda_runtime.invoke_config import EventInvokeConfig, read_event_invoke_config
from stepwell.testing.lambda_runtime.runtime import LambdaRuntime
from stepwell.testing.lambda_runtime.worker import InvocationTimeout, run_worker

__all__ = [
    "LATEST",
    "NODE_RUNTIMES",
    "BackendLambdaDriver",
    "ClientFactory",
    "CodeFetcher",
    "DrainResult",
    "EventInvokeConfig",
    "EventSourceMapping",
    "FunctionSpec",
    "InvalidFunctionReference",
    "InvocationResult",
    "InvocationTimeout",
    "LambdaRuntime",
    "RuntimeKind",
    "UnsupportedRuntime",
    "function_url_event",
    "function_url_response",
    "read_event_invoke_config",
    "run_worker",
    "runtime_kind",
    "split_function_reference",
]
