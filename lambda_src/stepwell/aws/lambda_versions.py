"""The FunctionVersions port on Lambda: the worker function's published versions and its alias.

Calls: GetAlias (the alias's version), ListVersionsByFunction, Invoke of a qualified ARN (synchronous:
the answer is the forwarded batch's item failures) and DeleteFunction of a qualified ARN, all on the one
function the worker's role is granted (docs/security.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from stepwell.aws.clients import error_code
from stepwell.errors import ForwardFailed, InvalidArgument
from stepwell.model import FunctionVersion

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

LATEST = "$LATEST"


class LambdaFunctionVersions:
    def __init__(self, lambda_client: LambdaClient, function_name: str, alias: str = "live") -> None:
        if not function_name:
            raise InvalidArgument("LambdaFunctionVersions needs the worker function's name")
        self._lambda = lambda_client
        self.function_name = function_name
        self.alias = alias

    def current_version(self) -> str | None:
        try:
            alias = self._lambda.get_alias(FunctionName=self.function_name, Name=self.alias)
        except ClientError as error:
            if error_code(error) == "ResourceNotFoundException":
                return None
            raise
        version = alias.get("FunctionVersion")
        return version if version and version != LATEST else None

    def list_versions(self) -> list[FunctionVersion]:
        current = self.current_version()
        versions: list[FunctionVersion] = []
        paginator = self._lambda.get_paginator("list_versions_by_function")
        for page in paginator.paginate(FunctionName=self.function_name):
            for entry in page.get("Versions", []):
                version = entry.get("Version", "")
                if not version or version == LATEST:
                    continue
                versions.append(
                    FunctionVersion(
                        version=version,
                        aliases=(self.alias,) if version == current else (),
                        last_modified=entry.get("LastModified", ""),
                        description=entry.get("Description", ""),
                    )
                )
        return sorted(versions, key=lambda v: int(v.version) if v.version.isdigit() else -1)

    def invoke(self, version: str, event: Mapping[str, Any]) -> dict[str, Any]:
        target = f"{self.function_name}:{version}"
        try:
            response = self._lambda.invoke(
                FunctionName=target,  # name:version (a qualifier inside the name works on every backend)
                InvocationType="RequestResponse",
                Payload=json.dumps(dict(event)).encode("utf-8"),
            )
        except ClientError as error:
            code = error_code(error)
            missing = code == "ResourceNotFoundException"
            cause = "the version does not exist (deleted or never published)" if missing else code
            raise ForwardFailed(f"invoke of {target} failed: {cause}", version, missing) from error
        text = response["Payload"].read().decode("utf-8") if "Payload" in response else ""
        if response.get("FunctionError"):
            # The error's type, not its message: that may quote a payload (it is in the function's logs).
            try:
                error_type = json.loads(text).get("errorType", "unknown")
            except (ValueError, AttributeError):
                error_type = "unknown"
            raise ForwardFailed(
                f"invoke of {target} failed: the function raised {error_type} ({response['FunctionError']})",
                version,
            )
        try:
            answer = json.loads(text) if text else {}
        except ValueError as error:
            raise ForwardFailed(
                f"invoke of {target} answered with non-JSON {text[:100]!r}", version
            ) from error
        if not isinstance(answer, dict):
            raise ForwardFailed(f"invoke of {target} answered with {text[:100]!r}, not an object", version)
        return answer

    def delete_version(self, version: str) -> None:
        if not version.isdigit():
            raise InvalidArgument(f"only a published version number can be deleted, got {version!r}")
        try:
            self._lambda.delete_function(FunctionName=self.function_name, Qualifier=version)
        except ClientError as error:
            if error_code(error) != "ResourceNotFoundException":  # already gone: that is the goal
                raise
