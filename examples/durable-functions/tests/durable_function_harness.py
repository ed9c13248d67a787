"""The example's test support: the function's package built by ../build.py, and what Lambda's front end does
for the API's AWS_IAM function URL (tests/api/iam_url_front.py) in front of the deployed API function, with
the team's function given its execution role's credentials and that front as its AWS_ENDPOINT_URL_LAMBDA."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepwell.features.lambda_api.access import Principal

from tests.api.iam_url_front import IamFunctionUrlFront, Identity

EXAMPLE = Path(__file__).resolve().parents[1]


def build_function_zip(out: Path) -> Path:
    """../build.py's build (loaded by path: the example's folder name is no Python package name)."""
    spec = importlib.util.spec_from_file_location("durable_functions_build", EXAMPLE / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built: Path = module.build(out)
    return built


@dataclass(frozen=True)
class DurableFunction:
    """The team's function as deployed: its name, its role's identity, and the API front it checkpoints at."""

    name: str
    identity: Identity
    front: IamFunctionUrlFront


def url_principals(lambda_client: Any, function_name: str) -> Callable[[], list[Principal]]:
    """The principals the API function's resource policy lets call its URL (read per request)."""

    def read() -> list[Principal]:
        policy = json.loads(lambda_client.get_policy(FunctionName=function_name)["Policy"])
        principals: list[Principal] = []
        for statement in policy.get("Statement", []):
            if statement.get("Action") == "lambda:InvokeFunctionUrl" and statement.get("Effect") == "Allow":
                given = statement.get("Principal")
                named = given.get("AWS") if isinstance(given, dict) else given
                principals.extend(
                    Principal.parse(text) for text in (named if isinstance(named, list) else [named])
                )
        return principals

    return read


def role_session(sts: Any, role_arn: str, session_name: str) -> Identity:
    """An STS session of `role_arn`, as Lambda runs a function with its execution role."""
    session = sts.assume_role(RoleArn=role_arn, RoleSessionName=session_name)
    keys, user = session["Credentials"], session["AssumedRoleUser"]
    return Identity(
        keys["AccessKeyId"],
        keys["SecretAccessKey"],
        user["Arn"],
        user["Arn"].split(":")[4],
        user["AssumedRoleId"],
        keys["SessionToken"],
    )
