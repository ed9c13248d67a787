"""The embedded moto server child: where moto differs from AWS in ways the harness depends on."""

from __future__ import annotations

import json
import urllib.error
from collections.abc import Iterator

import pytest
from stepwell.testing.backends import Backend, start_backend


@pytest.fixture(scope="module")
def moto_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    with start_backend("moto", log_dir=str(tmp_path_factory.mktemp("moto-server"))) as backend:
        yield backend


def test_setting_other_queue_attributes_keeps_the_queue_policy(moto_backend: Backend) -> None:
    sqs = moto_backend.client("sqs")
    policy = json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "sqs:SendMessage", "Resource": "*"}],
        }
    )
    url = sqs.create_queue(QueueName="keeps-policy", Attributes={"Policy": policy})["QueueUrl"]
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "7"})
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["VisibilityTimeout"] == "7"
    assert json.loads(attributes["Policy"]) == json.loads(policy)
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": ""})
    assert "Policy" not in sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]


def test_sending_to_a_mapped_queue_does_not_receive_the_message(moto_backend: Backend) -> None:
    iam, sqs, lam = moto_backend.client("iam"), moto_backend.client("sqs"), moto_backend.client("lambda")
    role = iam.create_role(RoleName="push-probe", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    url = sqs.create_queue(QueueName="mapped")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    lam.create_function(
        FunctionName="push-probe",
        Runtime="python3.13",
        Role=role,
        Handler="app.handler",
        Code={"ZipFile": b"PK\x05\x06" + b"\x00" * 18},
    )
    lam.create_event_source_mapping(EventSourceArn=arn, FunctionName="push-probe")
    sqs.send_message(QueueUrl=url, MessageBody="{}")
    received = sqs.receive_message(QueueUrl=url, MessageSystemAttributeNames=["ApproximateReceiveCount"])
    assert [m["Attributes"]["ApproximateReceiveCount"] for m in received["Messages"]] == ["1"]


def test_the_lambda_code_route_names_an_unknown_function(moto_backend: Backend) -> None:
    with pytest.raises(urllib.error.HTTPError) as raised:
        moto_backend.lambda_code("no-such-function")
    assert raised.value.code == 404
    assert b"no-such-function" in raised.value.read()
