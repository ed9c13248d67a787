"""A Lambda function URL front end with AWS_IAM auth, on 127.0.0.1, for tests.

Neither moto's harness runtime (it refuses every AWS_IAM URL) nor LocalStack (it serves one without any
check and without the caller's identity) does what Lambda's front end does for an AWS_IAM URL. This one
does, for the durable execution API's tests, in front of any function:

1. it checks each request's SigV4 signature (service `lambda`, the deployment's region) against the
   secret of the access key it names, from the credentials the test registered (`register`): an unsigned
   or badly signed request is 403, as Lambda answers it;
2. it checks the function's resource policy (`policy_principals`, e.g. read from GetPolicy): a caller it
   does not name for lambda:InvokeFunctionUrl is 403 (IAM identity policies are not emulated: a caller of
   the same account passes only when the resource policy names it);
3. it runs the function (`invoke`) on the payload format 2.0 event of the request, with
   `requestContext.authorizer.iam` naming the caller as Lambda does, and answers with what the function
   returned (stepwell.testing.lambda_runtime.function_url_payloads).

Point `boto3.client("lambda", endpoint_url=front.url)` or `aws --endpoint-url` at `front.url`.
"""

from __future__ import annotations

import hmac
import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from stepwell.features.lambda_api.access import Caller, Principal
from stepwell.testing.lambda_runtime.function_url_payloads import function_url_event, function_url_response
from stepwell.testing.lambda_runtime.functions import InvocationResult

_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[A-Za-z0-9]+)/(?P<date>[0-9]{8})/(?P<region>[a-z0-9-]+)/"
    r"(?P<service>[a-z0-9-]+)/aws4_request, ?SignedHeaders=(?P<headers>[a-z0-9;-]+), ?"
    r"Signature=(?P<signature>[0-9a-f]{64})"
)
_FORBIDDEN = b'{"Message":"Forbidden"}'


@dataclass(frozen=True)
class Identity:
    """A principal's credentials and who AWS says it is (an assumed role's session, a user)."""

    access_key_id: str
    secret_access_key: str
    arn: str
    account: str
    user_id: str
    session_token: str | None = None

    @property
    def caller(self) -> Caller:
        role = self.arn.split("/")[1] if ":assumed-role/" in self.arn else None
        return Caller(self.arn, self.account, self.arn.split(":")[1], role)

    def client_kwargs(self) -> dict[str, str | None]:
        return {
            "aws_access_key_id": self.access_key_id,
            "aws_secret_access_key": self.secret_access_key,
            "aws_session_token": self.session_token,
        }

    def environment(self) -> dict[str, str]:
        values = {"AWS_ACCESS_KEY_ID": self.access_key_id, "AWS_SECRET_ACCESS_KEY": self.secret_access_key}
        if self.session_token:
            values["AWS_SESSION_TOKEN"] = self.session_token
        return values


class IamFunctionUrlFront:
    """Serves one function as an AWS_IAM function URL would; `url` is where to point a client."""

    def __init__(
        self,
        invoke: Callable[[dict[str, Any]], Any],
        region: str,
        policy_principals: Callable[[], Iterable[Principal]],
        url_id: str = "stepwellapitest",
    ) -> None:
        self.invoke = invoke
        self.region = region
        self.policy_principals = policy_principals
        self.url_id = url_id
        self._identities: dict[str, Identity] = {}
        self.refusals: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="iam-url-front", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def register(self, identity: Identity) -> Identity:
        self._identities[identity.access_key_id] = identity
        return identity

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ Lambda's checks

    def caller(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Identity | str:
        """The signing identity of a request, or why it is refused."""
        match = _AUTHORIZATION.fullmatch(headers.get("authorization", ""))
        if match is None:
            return "no SigV4 Authorization header"
        identity = self._identities.get(match["key"])
        if identity is None:
            return f"unknown access key {match['key']}"
        if (match["region"], match["service"]) != (self.region, "lambda"):
            return f"signed for {match['service']} in {match['region']}, not lambda in {self.region}"
        stamp = headers.get("x-amz-date", "")
        if not stamp.startswith(match["date"]):
            return "X-Amz-Date is not the credential scope's date"
        signed = match["headers"].split(";")
        if "host" not in signed or any(name not in headers for name in signed):
            return "a signed header is missing"
        request = AWSRequest(
            method=method,
            url=f"http://{headers['host']}{path}",
            data=body,
            headers={name: headers[name] for name in signed},
        )
        request.context["timestamp"] = stamp
        credentials = Credentials(identity.access_key_id, identity.secret_access_key, identity.session_token)
        signer = SigV4Auth(credentials, "lambda", self.region)
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)), request
        )
        if not hmac.compare_digest(expected, match["signature"]):
            return "the signature does not match"
        if (
            identity.session_token is not None
            and headers.get("x-amz-security-token") != identity.session_token
        ):
            return "the session token does not match"
        if not any(principal.admits(identity.caller) for principal in self.policy_principals()):
            return f"the function's resource policy does not name {identity.arn}"
        return identity

    def event(
        self, identity: Identity, method: str, path: str, headers: list[tuple[str, str]], body: bytes
    ) -> dict[str, Any]:
        event = function_url_event(self.url_id, method, path, headers, body=body, source_ip="127.0.0.1")
        context = event["requestContext"]
        context["accountId"] = identity.account
        context["authorizer"] = {
            "iam": {
                "accessKey": identity.access_key_id,
                "accountId": identity.account,
                "callerId": identity.user_id,
                "cognitoIdentity": None,
                "principalOrgId": None,
                "userArn": identity.arn,
                "userId": identity.user_id,
            }
        }
        return event

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {name.lower(): value for name, value in self.headers.items()}
                found = front.caller(self.command, self.path, headers, body)
                if isinstance(found, str):
                    front.refusals.append(found)
                    self._answer(
                        403,
                        [("Content-Type", "application/json"), ("x-amzn-ErrorType", "AccessDeniedException")],
                        _FORBIDDEN,
                    )
                    return
                event = front.event(found, self.command, self.path, list(self.headers.items()), body)
                try:
                    result = InvocationResult("api", front.invoke(event))
                except Exception as error:  # the function failed: Lambda's 502
                    result = InvocationResult(
                        "api", None, {"errorType": type(error).__name__, "errorMessage": str(error)}
                    )
                status, answer_headers, answer = function_url_response(result)
                self._answer(status, answer_headers, answer)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

            def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


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
