"""Execution ARNs in AWS's shape, to and from Stepwell's execution ids, and Lambda function names."""

from __future__ import annotations

import re

import botocore.session
import pytest
from hypothesis import given
from hypothesis import strategies as st
from stepwell.core.arns import arn_name
from stepwell.features.lambda_api.arns import ArnContext, FunctionRef
from stepwell.features.lambda_api.errors import ApiError

from tests.api.conftest import ACCOUNT, ARNS, REGION

# The model's DurableExecutionArn pattern, for a workflow name without '.'.
MODEL_PATTERN = re.compile(
    botocore.session.get_session()
    .get_service_model("lambda")
    .shape_for("DurableExecutionArn")
    .metadata["pattern"]
)
KEY_PART = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:@+=,-]{0,127}", fullmatch=True)
WORKFLOW = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,63}", fullmatch=True)


@given(domain=KEY_PART, workflow=WORKFLOW, subject=KEY_PART, instance=KEY_PART)
def test_every_execution_id_maps_to_an_arn_of_the_models_shape_and_back(
    domain: str, workflow: str, subject: str, instance: str
) -> None:
    execution_id = f"{domain}#{workflow}#{subject}/{instance}"
    arn = ARNS.execution_arn(execution_id)
    assert MODEL_PATTERN.fullmatch(arn), arn
    assert len(arn) <= 1024
    assert ARNS.execution_id(arn) == execution_id


def test_an_arn_shows_the_function_and_the_execution_name() -> None:
    arn = ARNS.execution_arn("default#orders#order-7/order-7")
    assert arn.startswith(
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:orders:$LATEST/durable-execution/order-7/"
    )
    assert arn_name("a.b:c@d") == "a-b-c-d"
    assert arn_name("x" * 100) == "x" * 64
    # A workflow name with '.' stays as it is (the ARN then lies outside the model's pattern, which no
    # SDK checks).
    dotted = ARNS.execution_arn("default#orders.confirm#s/i")
    assert ":function:orders.confirm:$LATEST/" in dotted
    assert ARNS.execution_id(dotted) == "default#orders.confirm#s/i"


def _refused(value: str) -> ApiError:
    with pytest.raises(ApiError) as refused:
        ARNS.execution_id(value)
    return refused.value


def test_an_edited_or_foreign_arn_names_no_execution() -> None:
    arn = ARNS.execution_arn("default#orders#order-7/order-7")
    assert _refused(arn.replace(":function:orders:", ":function:other:")).code == "ResourceNotFoundException"
    assert _refused(arn.replace("/order-7/", "/order-8/")).code == "ResourceNotFoundException"
    assert _refused(arn.replace(ACCOUNT, "210987654321")).code == "ResourceNotFoundException"
    assert _refused(arn.replace(REGION, "eu-west-1")).code == "ResourceNotFoundException"
    assert _refused(arn[:-4] + "____").code == "ResourceNotFoundException"
    # Another qualifier names the same execution: it is not part of its identity.
    assert ARNS.execution_id(arn.replace(":$LATEST/", ":7/")) == "default#orders#order-7/order-7"


@pytest.mark.parametrize(
    "value",
    [
        "",
        "arn:aws:lambda:us-east-1:123456789012:function:orders",
        "arn:aws:lambda:us-east-1:123456789012:function:orders:$LATEST/durable-execution/n",
        "default#orders/x",
        "default#orders#s#t/x",
        "default#or ders#s/x",
        "default#orders#s/" + "x" * 200,
        "x" * 1025,
    ],
)
def test_anything_else_is_an_invalid_parameter_naming_the_accepted_shapes(value: str) -> None:
    refused = _refused(value)
    assert refused.code == "InvalidParameterValueException"
    assert refused.status == 400


@pytest.mark.parametrize(
    ("given_name", "expected"),
    [
        ("orders", FunctionRef("orders", None)),
        ("orders.confirm:7", FunctionRef("orders.confirm", "7")),
        ("orders:live", FunctionRef("orders", "live")),
        (f"{ACCOUNT}:function:orders:$LATEST", FunctionRef("orders", "$LATEST")),
        (f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:orders", FunctionRef("orders", None)),
        (
            f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:orders:$LATEST.PUBLISHED",
            FunctionRef("orders", "$LATEST.PUBLISHED"),
        ),
    ],
)
def test_function_names_in_every_form_lambda_takes(given_name: str, expected: FunctionRef) -> None:
    assert ARNS.function(given_name) == expected


@pytest.mark.parametrize(
    ("given_name", "code"),
    [
        ("9orders", "InvalidParameterValueException"),
        ("orders:a:b", "InvalidParameterValueException"),
        ("x" * 257, "InvalidParameterValueException"),
        (f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:orders", "ResourceNotFoundException"),
        ("210987654321:function:orders", "ResourceNotFoundException"),
        (f"arn:aws-cn:lambda:{REGION}:{ACCOUNT}:function:orders", "ResourceNotFoundException"),
    ],
)
def test_other_function_names_are_refused(given_name: str, code: str) -> None:
    with pytest.raises(ApiError) as refused:
        ARNS.function(given_name)
    assert refused.value.code == code


def test_the_context_comes_from_the_functions_own_arn() -> None:
    context = ArnContext.from_function_arn(
        f"arn:aws-us-gov:lambda:us-gov-west-1:{ACCOUNT}:function:sw-api:live"
    )
    assert context == ArnContext("aws-us-gov", "us-gov-west-1", ACCOUNT)
    with pytest.raises(ValueError):
        ArnContext.from_function_arn("arn:aws:s3:::bucket")
