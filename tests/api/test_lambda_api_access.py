"""Who may do what: the function URL's AWS_IAM check (a signature, a principal of the resource policy) and
the handler's own check of the signed caller against each class of operation (read, operate, callbacks).
Every refused call changes nothing."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from stepwell.features.lambda_api.access import AccessPolicy, Caller, Principal, PrincipalError, caller_of
from stepwell.features.lambda_api.settings import SettingsError, api_settings

from tests.api.conftest import (
    ACCOUNT,
    ARNS,
    CLIENT_CONFIG,
    OPERATOR,
    READER,
    REGION,
    SENDER,
    STRANGER,
    ApiStack,
)


def _denied(call: Any) -> str:
    with pytest.raises(ClientError) as refused:
        call()
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    return str(refused.value.response["Error"]["Message"])


def _running(stack: ApiStack) -> tuple[str, str]:
    arn = stack.client().invoke(FunctionName="approval", Payload=b"{}", InvocationType="Event")[
        "DurableExecutionArn"
    ]
    stack.local.run_until_idle()
    return arn, stack.local.callback_id(ARNS.execution_id(arn))


def test_a_reader_reads_and_may_not_start_stop_or_send_callbacks(stack: ApiStack) -> None:
    arn, callback_id = _running(stack)
    reader = stack.client(READER)
    assert reader.get_durable_execution(DurableExecutionArn=arn)["Status"] == "RUNNING"
    assert reader.get_durable_execution_history(DurableExecutionArn=arn)["Events"]
    assert len(reader.list_durable_executions_by_function(FunctionName="approval")["DurableExecutions"]) == 1
    message = _denied(lambda: reader.invoke(FunctionName="approval", Payload=b"{}", InvocationType="Event"))
    assert READER.arn in message and "lambda:Invoke" in message and "api_principals.operate" in message
    _denied(lambda: reader.stop_durable_execution(DurableExecutionArn=arn))
    message = _denied(lambda: reader.send_durable_execution_callback_success(CallbackId=callback_id))
    assert "api_principals.callbacks" in message
    assert stack.client().get_durable_execution(DurableExecutionArn=arn)["Status"] == "RUNNING"
    assert (
        len(stack.client().list_durable_executions_by_function(FunctionName="approval")["DurableExecutions"])
        == 1
    )


def test_a_callback_sender_sends_callbacks_and_reads_nothing(stack: ApiStack) -> None:
    arn, callback_id = _running(stack)
    sender = stack.client(SENDER)
    message = _denied(lambda: sender.get_durable_execution(DurableExecutionArn=arn))
    assert "api_principals.read" in message
    _denied(lambda: sender.stop_durable_execution(DurableExecutionArn=arn))
    sender.send_durable_execution_callback_success(CallbackId=callback_id, Result=b'"ok"')
    stack.local.run_until_idle()
    assert stack.client().get_durable_execution(DurableExecutionArn=arn)["Status"] == "SUCCEEDED"


def test_the_function_url_refuses_an_unsigned_request_a_bad_signature_and_a_caller_it_does_not_name(
    stack: ApiStack,
) -> None:
    arn, _ = _running(stack)
    path = f"{stack.front.url}/2025-12-01/durable-executions/{ARNS.execution_id(arn).replace('#', '%23')}"
    with pytest.raises(urllib.error.HTTPError) as unsigned:
        urllib.request.urlopen(path, timeout=10)
    assert unsigned.value.code == 403
    assert json.loads(unsigned.value.read()) == {"Message": "Forbidden"}
    assert stack.front.refusals[-1] == "no SigV4 Authorization header"

    _denied(lambda: stack.client(STRANGER).get_durable_execution(DurableExecutionArn=arn))
    assert stack.front.refusals[-1].startswith("the function's resource policy does not name")
    stack.front.register(OPERATOR)
    forged = boto3.client(
        "lambda",
        endpoint_url=stack.front.url,
        region_name=REGION,
        config=CLIENT_CONFIG,
        aws_access_key_id=OPERATOR.access_key_id,
        aws_secret_access_key="a-guessed-secret",
        aws_session_token=OPERATOR.session_token,
    )
    _denied(lambda: forged.stop_durable_execution(DurableExecutionArn=arn))
    assert stack.front.refusals[-1] == "the signature does not match"
    assert stack.client().get_durable_execution(DurableExecutionArn=arn)["Status"] == "RUNNING"


def test_a_caller_the_function_url_lets_through_but_no_class_lists_is_refused_by_the_handler(
    stack: ApiStack,
) -> None:
    """An account principal in the resource policy (or a same-account caller whose own IAM policies allow
    the URL) still reaches only what api_principals lists it for."""
    arn, _ = _running(stack)
    stack.front.policy_principals = lambda: [Principal.parse(ACCOUNT)]
    message = _denied(lambda: stack.client(STRANGER).get_durable_execution(DurableExecutionArn=arn))
    assert STRANGER.arn in message and "api_principals.read" in message


def test_an_event_without_a_signed_caller_is_refused_by_the_handler(stack: ApiStack) -> None:
    event = {
        "version": "2.0",
        "rawPath": "/2025-12-01/functions/approval/durable-executions",
        "rawQueryString": "",
        "headers": {},
        "requestContext": {"http": {"method": "GET"}, "accountId": "anonymous"},
        "isBase64Encoded": False,
    }
    answer = stack.handler.handle(event)
    assert answer["statusCode"] == 403
    assert answer["headers"]["x-amzn-ErrorType"] == "AccessDeniedException"
    assert "AWS_IAM" in json.loads(answer["body"])["Message"]
    event["requestContext"]["authorizer"] = {"iam": {"userArn": "not an arn"}}
    assert stack.handler.handle(event)["statusCode"] == 403


@pytest.mark.parametrize(
    ("principal", "caller", "admitted"),
    [
        (ACCOUNT, f"arn:aws:sts::{ACCOUNT}:assumed-role/any/s", True),
        (f"arn:aws:iam::{ACCOUNT}:root", f"arn:aws:iam::{ACCOUNT}:user/u", True),
        (ACCOUNT, "arn:aws:sts::210987654321:assumed-role/any/s", False),
        (f"arn:aws:iam::{ACCOUNT}:role/a/b/ops", f"arn:aws:sts::{ACCOUNT}:assumed-role/ops/session-1", True),
        (f"arn:aws:iam::{ACCOUNT}:role/ops", f"arn:aws:sts::{ACCOUNT}:assumed-role/ops2/s", False),
        (f"arn:aws:iam::{ACCOUNT}:role/ops", f"arn:aws:iam::{ACCOUNT}:user/ops", False),
        (f"arn:aws:iam::{ACCOUNT}:user/p/u", f"arn:aws:iam::{ACCOUNT}:user/p/u", True),
        (f"arn:aws:iam::{ACCOUNT}:user/p/u", f"arn:aws:iam::{ACCOUNT}:user/u", False),
        (f"arn:aws:iam::{ACCOUNT}:role/ops", f"arn:aws-cn:sts::{ACCOUNT}:assumed-role/ops/s", False),
    ],
)
def test_principals_admit_callers(principal: str, caller: str, admitted: bool) -> None:
    found = caller_of({"requestContext": {"authorizer": {"iam": {"userArn": caller}}}})
    assert isinstance(found, Caller)
    assert Principal.parse(principal).admits(found) is admitted


@pytest.mark.parametrize(
    "bad",
    ["12345", "arn:aws:iam::123456789012:group/admins", "arn:aws:sts::123456789012:assumed-role/r/s", "*", 7],
)
def test_a_principal_of_another_form_is_refused_naming_the_forms(bad: object) -> None:
    with pytest.raises(PrincipalError) as refused:
        Principal.parse(bad)
    assert "an IAM role ARN" in str(refused.value)


def test_the_settings_read_the_principal_lists_and_name_a_bad_one() -> None:
    environ = {
        "STEPWELL_API_READ_PRINCIPALS": json.dumps([ACCOUNT]),
        "STEPWELL_API_OPERATE_PRINCIPALS": json.dumps([f"arn:aws:iam::{ACCOUNT}:role/ops"]),
        "STEPWELL_API_WORKFLOWS": json.dumps(["greet"]),
        "STEPWELL_API_MAX_WAIT_SECONDS": "30",
    }
    settings = api_settings(environ, ARNS, 30, "")
    assert settings.access == AccessPolicy.from_lists([ACCOUNT], [f"arn:aws:iam::{ACCOUNT}:role/ops"], [])
    assert settings.workflows == frozenset({"greet"}) and settings.max_wait_seconds == 30.0
    assert api_settings({}, ARNS, 30, "").workflows is None
    for name, value in (
        ("STEPWELL_API_CALLBACK_PRINCIPALS", '["*"]'),
        ("STEPWELL_API_READ_PRINCIPALS", "{}"),
        ("STEPWELL_API_WORKFLOWS", '["no spaces allowed"]'),
        ("STEPWELL_API_MAX_WAIT_SECONDS", "901"),
    ):
        with pytest.raises(SettingsError) as refused:
            api_settings({**environ, name: value}, ARNS, 30, "")
        assert name in str(refused.value)
