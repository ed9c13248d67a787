"""The durable functions' SSM parameter (stepwell.aws.parameters, issue 41), read as the worker and the API
function read it at cold start, on moto in-process: its registrations and roles, a SecureString with the
customer key, and the clear errors of a missing or bad parameter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from stepwell.aws.clients import AwsClients
from stepwell.aws.parameters import read_durable_functions
from stepwell.config import ConfigError, StepwellConfig
from stepwell.core.remote_functions import RemoteFunction
from stepwell.wiring.build import with_durable_functions_parameter

REGION = "eu-west-1"
ACCOUNT = "123456789012"
PARAMETER = "/stepwell/dev/durable-functions"
SHIP = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:ship"
BILL = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:bill"
SHIP_ROLE = f"arn:aws:iam::{ACCOUNT}:role/ship"
DOCUMENT = {
    "functions": {
        "orders.ship": {
            "function_arn": SHIP,
            "qualifier": "live",
            "timeout_seconds": 60,
            "role_arn": SHIP_ROLE,
        },
        "bill": {"function_arn": BILL, "qualifier": None, "timeout_seconds": 900, "role_arn": SHIP_ROLE},
    }
}


@pytest.fixture
def ssm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield AwsClients(region=REGION).ssm


def _put(ssm: Any, value: str, **extra: Any) -> None:
    ssm.put_parameter(Name=PARAMETER, Value=value, Type=extra.pop("Type", "String"), Overwrite=True, **extra)


def test_the_parameter_gives_the_registrations_with_their_timeouts_and_the_roles_once(ssm: Any) -> None:
    _put(ssm, json.dumps(DOCUMENT))
    document = read_durable_functions(ssm, PARAMETER)
    assert document.roles == (SHIP_ROLE,)
    config = _config().with_durable_functions(document.registrations, PARAMETER)
    assert config.remote_functions == {
        "orders.ship": RemoteFunction(SHIP, "live", 60),
        "bill": RemoteFunction(BILL, None, 900),
    }


def test_a_secure_string_with_the_customer_key_is_decrypted(ssm: Any) -> None:
    key = boto3.client("kms", region_name=REGION).create_key()["KeyMetadata"]["Arn"]
    _put(ssm, json.dumps(DOCUMENT), Type="SecureString", KeyId=key)
    assert set(read_durable_functions(ssm, PARAMETER).registrations) == {"orders.ship", "bill"}


def test_the_wiring_adds_the_parameters_functions_to_the_environments(ssm: Any) -> None:
    _put(ssm, json.dumps(DOCUMENT))
    environment = {"STEPWELL_DURABLE_FUNCTIONS_PARAMETER": PARAMETER}
    config, roles = with_durable_functions_parameter(_config(), environment, AwsClients(region=REGION))
    assert set(config.remote_functions) == {"orders.ship", "bill"} and roles == (SHIP_ROLE,)
    # No parameter named: nothing read, nothing added.
    config, roles = with_durable_functions_parameter(_config(), {}, AwsClients(region=REGION))
    assert config.durable_functions == {} and roles == ()


def test_a_name_registered_in_the_environment_too_is_refused(ssm: Any) -> None:
    _put(ssm, json.dumps(DOCUMENT))
    config = _config(durable_functions={"bill": {"function_arn": BILL, "qualifier": None}})
    with pytest.raises(
        ConfigError, match=r"SSM parameter /stepwell/dev/durable-functions registers \['bill'\]"
    ):
        with_durable_functions_parameter(
            config, {"STEPWELL_DURABLE_FUNCTIONS_PARAMETER": PARAMETER}, AwsClients(region=REGION)
        )


def test_a_missing_parameter_is_named(ssm: Any) -> None:
    with pytest.raises(ConfigError, match=f"SSM parameter {PARAMETER} .*does not exist"):
        read_durable_functions(ssm, PARAMETER)


@pytest.mark.parametrize(
    ("value", "wrong"),
    [
        ("{not json", "is not JSON"),
        (json.dumps({"ship": DOCUMENT["functions"]["bill"]}), r"must be a JSON object \{\"functions\""),
        (json.dumps({"functions": []}), r"must be a JSON object \{\"functions\""),
        (
            json.dumps(
                {"functions": {"bill": {"function_arn": BILL, "qualifier": None, "role_arn": SHIP_ROLE}}}
            ),
            r"functions\['bill'\] must be an object with function_arn, qualifier, role_arn, timeout_seconds",
        ),
        (
            json.dumps({"functions": {"bill": {**DOCUMENT["functions"]["bill"], "role_arn": "ship"}}}),
            r"functions\['bill'\]\.role_arn 'ship' is no IAM role ARN",
        ),
        (
            json.dumps({"functions": {"bill": {**DOCUMENT["functions"]["bill"], "timeout_seconds": 0}}}),
            r"\['bill'\]\.timeout_seconds 0",
        ),
        (
            json.dumps({"functions": {"bill": {**DOCUMENT["functions"]["bill"], "function_arn": "bill"}}}),
            r"\['bill'\]\.function_arn",
        ),
        (json.dumps({"functions": {"1bill": DOCUMENT["functions"]["bill"]}}), "1bill"),
        (json.dumps({"functions": {}, "pad": "x" * 8192}), "holds 8.* characters; at most 8192"),
    ],
)
def test_a_bad_parameter_is_refused_naming_it_and_what_is_wrong(ssm: Any, value: str, wrong: str) -> None:
    _put(ssm, value, Tier="Advanced") if len(value) > 4096 else _put(ssm, value)
    with pytest.raises(ConfigError, match=wrong) as caught:
        read_durable_functions(ssm, PARAMETER)
    assert PARAMETER in str(caught.value)


def _config(**extra: Any) -> StepwellConfig:
    return StepwellConfig(
        name="dev",
        executions_table="e",
        operations_table="o",
        coordination_table="c",
        work_queue_url=f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/q",
        **extra,
    )
