"""The durable functions' SSM parameter (issue 41): the module writes the registrations there
(modules/api) and the worker and the API function read it once at cold start, by the name their
environment carries (STEPWELL_DURABLE_FUNCTIONS_PARAMETER): the registrations in their environments
would make both functions depend on the registered functions, which take the API's URL."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from stepwell.aws.clients import error_code
from stepwell.config import ConfigError, DurableFunctionsDocument, parse_durable_functions_parameter


def read_durable_functions(ssm: Any, parameter: str) -> DurableFunctionsDocument:
    """The parameter `parameter`'s registrations (decrypted when it is a SecureString), checked; ConfigError
    naming the parameter when it is missing, unreadable or bad. `ssm` is a boto3 SSM client."""
    try:
        answer = ssm.get_parameter(Name=parameter, WithDecryption=True)
    except ClientError as error:
        code = error_code(error)
        if code == "ParameterNotFound":
            raise ConfigError(
                f"SSM parameter {parameter} (STEPWELL_DURABLE_FUNCTIONS_PARAMETER) does not exist: the "
                "module writes it with the API (enable_api)"
            ) from None
        raise ConfigError(f"SSM parameter {parameter} could not be read: {code}: {error}") from error
    except BotoCoreError as error:
        raise ConfigError(f"SSM parameter {parameter} could not be read: {error}") from error
    value = answer.get("Parameter", {}).get("Value") if isinstance(answer, dict) else None
    if not isinstance(value, str):
        raise ConfigError(f"SSM parameter {parameter} answered no value")
    return parse_durable_functions_parameter(parameter, value)
