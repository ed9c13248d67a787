"""The Lambda invoker of `context.invoke` targets that are Lambda functions (stepwell.core.invoke_targets)
and of remote durable functions (stepwell.core.remote_functions, asynchronously): Lambda's Invoke API, with
refusals told apart from errors worth a retry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from stepwell.core.invoke_targets import LambdaInvokeRefused, LambdaResponse

if TYPE_CHECKING:
    from stepwell.aws.clients import AwsClients


class BotoLambdaInvoker:
    """LambdaInvoker over Lambda's Invoke API (RequestResponse), on the client that waits as long as a
    function may run (AwsClients.lambda_invoke, made on the first invoke)."""

    def __init__(self, clients: AwsClients) -> None:
        self._clients = clients

    def invoke(self, function: str, payload: bytes) -> LambdaResponse:
        try:
            response = self._clients.lambda_invoke.invoke(
                FunctionName=function, InvocationType="RequestResponse", Payload=payload
            )
        except ClientError as error:
            raise _refused(error) from error
        return LambdaResponse(
            payload=response["Payload"].read(),
            function_error=response.get("FunctionError"),
            executed_version=response.get("ExecutedVersion"),
        )

    def invoke_event(self, function: str, qualifier: str | None, payload: bytes) -> None:
        """AsyncLambdaInvoker (stepwell.core.remote_functions): an Event invoke, answered at once (202);
        Lambda sends the function's result to its destination (the work queue)."""
        try:
            if qualifier is None:
                self._clients.lambda_.invoke(FunctionName=function, InvocationType="Event", Payload=payload)
            else:
                self._clients.lambda_.invoke(
                    FunctionName=function, InvocationType="Event", Payload=payload, Qualifier=qualifier
                )
        except ClientError as error:
            raise _refused(error) from error


def _refused(error: ClientError) -> Exception:
    """LambdaInvokeRefused for a refusal for good (a 4xx but throttling), else the error itself."""
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 500)
    details = error.response.get("Error", {})
    if 400 <= status < 500 and status != 429:
        return LambdaInvokeRefused(
            details.get("Code", "Lambda.InvokeError"), details.get("Message", str(error))
        )
    return error
