"""The FunctionVersions port on Lambda (moto in-process): published versions, the alias, qualified invokes
and their failures, deletion; and the entry building it from the deployment's config."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import requests
from botocore.response import StreamingBody
from botocore.stub import Stubber
from moto import mock_aws
from stepwell.aws.clients import AwsClients
from stepwell.aws.lambda_versions import LambdaFunctionVersions
from stepwell.config import ConfigError, StepwellConfig
from stepwell.core.registry import Registry
from stepwell.errors import ForwardFailed, InvalidArgument
from stepwell.wiring.entry import EntryRuntime

from .deployment import REGION, create_deployment

FUNCTION = "sw-test-worker"


def _zip(text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", text)
    return buffer.getvalue()


def _publish_two_versions() -> Any:
    """The worker function with versions 1 and 2 published and `live` on 2, in the active mock."""
    iam = boto3.client("iam", region_name=REGION)
    role = iam.create_role(RoleName="worker", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    client = boto3.client("lambda", region_name=REGION)
    client.create_function(
        FunctionName=FUNCTION,
        Runtime="python3.12",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": _zip("v1 = 1\n")},
        Publish=True,
    )
    client.update_function_code(FunctionName=FUNCTION, ZipFile=_zip("v2 = 2\n"))
    client.publish_version(FunctionName=FUNCTION)
    client.create_alias(FunctionName=FUNCTION, Name="live", FunctionVersion="2")
    return client


@pytest.fixture
def lambda_client(aws_credentials: None) -> Iterator[Any]:
    """Lambda as moto runs it without Docker: an invoke answers with queued results, runs no code."""
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield _publish_two_versions()


def test_versions_are_listed_in_order_with_the_alias_on_its_version(lambda_client: Any) -> None:
    functions = LambdaFunctionVersions(lambda_client, FUNCTION)

    assert functions.current_version() == "2"
    listed = functions.list_versions()
    assert [(v.version, v.aliases) for v in listed] == [("1", ()), ("2", ("live",))]
    assert all(v.last_modified for v in listed)

    assert LambdaFunctionVersions(lambda_client, FUNCTION, alias="canary").current_version() is None


def test_a_qualified_invoke_returns_the_versions_answer(lambda_client: Any) -> None:
    functions = LambdaFunctionVersions(lambda_client, FUNCTION)
    answer = {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    # moto's Lambda without Docker answers with the results queued here.
    queued = requests.post(
        "http://motoapi.amazonaws.com/moto-api/static/lambda-simple/response",
        json={"results": [json.dumps(answer), "not json"], "region": REGION},
        timeout=5,
    )
    assert queued.status_code == 201

    assert functions.invoke("1", {"Records": []}) == answer
    with pytest.raises(ForwardFailed, match="sw-test-worker:1 answered with non-JSON 'not json'"):
        functions.invoke("1", {"Records": []})


def test_an_invoke_of_a_missing_version_is_a_forward_failure_naming_it(aws_credentials: None) -> None:
    # moto's full Lambda backend checks the qualifier before it would start a container.
    with mock_aws():
        functions = LambdaFunctionVersions(_publish_two_versions(), FUNCTION)
        with pytest.raises(
            ForwardFailed, match="sw-test-worker:9 failed: the version does not exist"
        ) as missing:
            functions.invoke("9", {"Records": []})
    assert missing.value.version_missing and missing.value.version == "9"


def test_a_function_error_of_the_invoked_version_is_a_forward_failure_naming_its_type() -> None:
    client = boto3.client("lambda", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    payload = json.dumps({"errorType": "KeyError", "errorMessage": "secret input"}).encode()
    with Stubber(client) as stubber:
        stubber.add_response(
            "invoke",
            {
                "StatusCode": 200,
                "FunctionError": "Unhandled",
                "Payload": StreamingBody(io.BytesIO(payload), len(payload)),
            },
            {
                "FunctionName": f"{FUNCTION}:3",
                "InvocationType": "RequestResponse",
                "Payload": b'{"Records": []}',
            },
        )
        with pytest.raises(
            ForwardFailed, match=r"sw-test-worker:3 failed: the function raised KeyError"
        ) as failed:
            LambdaFunctionVersions(client, FUNCTION).invoke("3", {"Records": []})
    assert "secret input" not in str(failed.value) and not failed.value.version_missing


def test_a_version_is_deleted_once_and_only_published_numbers_are(lambda_client: Any) -> None:
    functions = LambdaFunctionVersions(lambda_client, FUNCTION)

    functions.delete_version("1")
    functions.delete_version("1")  # already gone: nothing to do

    assert [v.version for v in functions.list_versions()] == ["2"]
    with pytest.raises(
        InvalidArgument, match=r"only a published version number can be deleted, got '\$LATEST'"
    ):
        functions.delete_version("$LATEST")


def test_the_entry_runs_as_the_version_lambda_names_and_prunes_with_the_configured_policy(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with mock_aws():
        config = create_deployment()
        env = {**config.to_env(), "STEPWELL_WORKER_FUNCTION_NAME": FUNCTION, "STEPWELL_KEEP_VERSIONS": "5"}
        env["STEPWELL_WORKER_ALIAS"] = "current"
        from_env = StepwellConfig.from_env(env)
        monkeypatch.setenv("AWS_LAMBDA_FUNCTION_VERSION", "7")
        runtime = EntryRuntime.from_config(from_env, AwsClients(region=REGION), registry=Registry())

        functions = runtime.engine.functions
        assert runtime.engine.code_version == "7"
        assert isinstance(functions, LambdaFunctionVersions) and functions.alias == "current"
        assert runtime.reconciler.keep_versions == 5

        monkeypatch.setenv("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        unversioned = EntryRuntime.from_config(config, AwsClients(region=REGION), registry=Registry())
        assert unversioned.engine.code_version is None


@pytest.mark.parametrize("value", ["0", "101", "three"])
def test_keep_versions_out_of_range_is_a_clear_config_error(value: str) -> None:
    with mock_aws():
        env = create_deployment().to_env()
    env["STEPWELL_KEEP_VERSIONS"] = value
    with pytest.raises(
        ConfigError, match=rf"(keep_versions must be 1..100|STEPWELL_KEEP_VERSIONS must be a whole).*{value}"
    ):
        StepwellConfig.from_env(env)


def test_the_client_config_carries_the_alias_and_how_many_versions_to_keep() -> None:
    with mock_aws():
        base = create_deployment().to_client_config()
    config = StepwellConfig.from_client_config({**base, "worker_alias": "blue", "keep_versions": "4"})
    assert (config.worker_alias, config.keep_versions) == ("blue", 4)
    assert StepwellConfig.from_client_config(config.to_client_config()) == config
    with pytest.raises(ConfigError, match=r"keep_versions must be 1\.\.100 .* got 0"):
        StepwellConfig.from_client_config({**base, "keep_versions": 0})
