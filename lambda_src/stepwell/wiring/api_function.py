"""The Lambda handler of the `<name>-api` function behind its function URL (AWS_IAM auth): Lambda's durable
execution API (stepwell.features.lambda_api) on an engine built from the environment the module sets.

Who may call: the module's api_principals, listed per class of operation in the function's environment
(STEPWELL_API_READ_PRINCIPALS, ..._OPERATE_..., ..._CALLBACK_...) and granted lambda:InvokeFunctionUrl in
its resource policy; the handler checks each request's signed caller (requestContext.authorizer.iam)
against the class of the operation; STEPWELL_API_TENANT_PRINCIPALS limits listed principals to some
tenants' executions (stepwell.features.lambda_api.tenants). The deployment's ARNs (partition, region,
account) are the function's own, from its Lambda context.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from stepwell.aws.clients import AwsClients
from stepwell.clock import SystemClock
from stepwell.config import StepwellConfig
from stepwell.core.logs import install_json_logging
from stepwell.features.lambda_api.arns import ArnContext
from stepwell.features.lambda_api.handler import LambdaApiHandler
from stepwell.features.lambda_api.settings import api_settings
from stepwell.wiring.build import (
    AnyWorkflowRegistry,
    allow_deployment_targets,
    build_engine,
    with_durable_functions_parameter,
)

_handler: LambdaApiHandler | None = None
_handler_lock = threading.Lock()


def load_handler(function_arn: str, environ: Mapping[str, str] | None = None) -> LambdaApiHandler:
    """The container's handler, built once from the environment the module sets and the function's ARN."""
    global _handler
    with _handler_lock:
        if _handler is None:
            env = os.environ if environ is None else environ
            config = StepwellConfig.from_env(env)
            install_json_logging(config.log_level)
            # Every valid workflow name may be started by the engine; the handler refuses names the
            # deployment does not list (STEPWELL_API_WORKFLOWS) before it asks the engine.
            clients = AwsClients(region=config.region or None)
            # The durable functions and their roles (the data plane's callers), from their parameter.
            config, roles = with_durable_functions_parameter(config, env, clients)
            # The remote functions' chained invokes resolve their targets here (the data plane).
            registry = allow_deployment_targets(AnyWorkflowRegistry(), config, clients)
            engine = build_engine(config, clients, registry, SystemClock())
            engine.code_version = None  # the API function is no worker version: it never pins nor forwards
            settings = api_settings(
                env,
                ArnContext.from_function_arn(function_arn),
                config.retention_days,
                config.kms_key_arn,
                function_roles=roles,
                durable_workflows=tuple(config.durable_functions),
            )
            _handler = LambdaApiHandler(engine, settings)
        return _handler


def handler(event: Any, context: Any) -> dict[str, Any]:
    """The Lambda handler of the `<name>-api` function (its function URL's requests)."""
    api = load_handler(str(context.invoked_function_arn))
    return api.handle(event, context.get_remaining_time_in_millis() / 1000)
