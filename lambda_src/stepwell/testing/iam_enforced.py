"""An IAM-enforcing moto backend and the principals that use a deployment on it.

``iam_enforced_backend()`` starts the harness's moto server with ``enforce_iam`` (stepwell.testing.moto_iam)
and ``INITIAL_NO_AUTH_ACTION_COUNT`` = ``BOOTSTRAP_REQUESTS``: the only free requests create an ``admin``
user (``*`` on ``*``) and its access key, the credentials Terraform and the harness's plumbing use. Every
later request must be signed with a known key and allowed by the caller's policies.

``Principals`` then makes the module's principals from its outputs: an IAM user per access policy
(``operator``, ``reader``, ``callback_sender``, ``producer:<source>``) carrying exactly that policy, and the
service principals (``lambda.amazonaws.com``) that assume the functions' roles through STS, as Lambda does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config

from stepwell.testing.backends import DEFAULT_REGION, Backend
from stepwell.testing.moto_iam import SERVICE_PRINCIPALS
from stepwell.testing.moto_server import DEFAULT_ACCOUNT_ID, moto_server

ADMIN_USER = "admin"
# CreateUser, PutUserPolicy, CreateAccessKey: the admin's bootstrap, moto's free requests.
BOOTSTRAP_REQUESTS = 3
_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
_ASSUME_ANY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}],
}
# A refused call is final: no retries that would only slow the refused-call tests down.
_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 2}, connect_timeout=10, read_timeout=120)


@dataclass(frozen=True)
class Keys:
    """Credentials of one principal: an IAM user's key, or an STS session's (with its token)."""

    access_key_id: str
    secret_access_key: str
    session_token: str | None = None

    def environment(self) -> dict[str, str]:
        """As a Lambda function (or a CLI run) gets them."""
        values = {"AWS_ACCESS_KEY_ID": self.access_key_id, "AWS_SECRET_ACCESS_KEY": self.secret_access_key}
        if self.session_token:
            values["AWS_SESSION_TOKEN"] = self.session_token
        return values

    def session(self, region: str) -> boto3.Session:
        return boto3.Session(
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            aws_session_token=self.session_token,
            region_name=region,
        )


def _user_keys(iam: Any, name: str, policy: Mapping[str, Any] | str) -> Keys:
    document = policy if isinstance(policy, str) else json.dumps(policy)
    iam.create_user(UserName=name)
    iam.put_user_policy(UserName=name, PolicyName="access", PolicyDocument=document)
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return Keys(key["AccessKeyId"], key["SecretAccessKey"])


@contextmanager
def iam_enforced_backend(region: str = DEFAULT_REGION, log_path: str | None = None) -> Iterator[Backend]:
    """A moto backend enforcing IAM, whose credentials are the bootstrapped admin's."""
    with moto_server(log_path=log_path, enforce_iam=True, free_requests=BOOTSTRAP_REQUESTS) as server:
        # Any key will do for the free requests; the admin's key signs everything after them.
        iam = boto3.client(
            "iam",
            endpoint_url=server.endpoint_url,
            region_name=region,
            aws_access_key_id="bootstrap",
            aws_secret_access_key="bootstrap",
        )
        admin = _user_keys(iam, ADMIN_USER, _ALL)
        yield Backend(
            "moto",
            server.endpoint_url,
            region,
            DEFAULT_ACCOUNT_ID,
            access_key_id=admin.access_key_id,
            secret_access_key=admin.secret_access_key,
            moto=server,
        )


class Principals:
    """The deployment's principals on an IAM-enforcing backend (see the module docstring)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._iam = backend.client("iam")
        self.users: dict[str, Keys] = {}
        self._sessions: dict[str, Keys] = {}

    def user(self, name: str, policy: Mapping[str, Any] | str) -> Keys:
        """An IAM user carrying exactly ``policy`` (created once per name)."""
        if name not in self.users:
            self.users[name] = _user_keys(self._iam, name.replace(":", "-"), policy)
        return self.users[name]

    def service(self, principal: str) -> Keys:
        """The harness playing an AWS service (``lambda.amazonaws.com``): it may assume the roles that
        trust that service, and nothing else (the roles' trust policies decide)."""
        if principal not in SERVICE_PRINCIPALS:
            raise ValueError(f"{principal!r} is not one of {SERVICE_PRINCIPALS}")
        return self.user(principal, _ASSUME_ANY)

    def role_session(self, role_arn: str, as_service: str = "lambda.amazonaws.com") -> Keys:
        """STS credentials of ``role_arn``, assumed by the service its trust policy names."""
        if role_arn not in self._sessions:
            sts = self.client("sts", self.service(as_service))
            answer = sts.assume_role(RoleArn=role_arn, RoleSessionName="stepwell-harness")["Credentials"]
            self._sessions[role_arn] = Keys(
                answer["AccessKeyId"], answer["SecretAccessKey"], answer["SessionToken"]
            )
        return self._sessions[role_arn]

    def client(self, service_name: str, keys: Keys) -> Any:
        """A boto3 client of the backend signed with ``keys``."""
        return keys.session(self.backend.region).client(
            service_name,  # type: ignore[call-overload]
            endpoint_url=self.backend.endpoint_url,
            config=_CLIENT_CONFIG,
        )

    def backend_as(self, keys: Keys) -> Backend:
        """The backend as a user (``Backend`` carries no session token: users only)."""
        if keys.session_token:
            raise ValueError("Backend takes a user's key; use client() for a role session")
        return Backend(
            self.backend.name,
            self.backend.endpoint_url,
            self.backend.region,
            self.backend.account_id,
            access_key_id=keys.access_key_id,
            secret_access_key=keys.secret_access_key,
            moto=self.backend.moto,
        )
