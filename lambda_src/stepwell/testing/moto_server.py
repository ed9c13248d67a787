"""moto's server in a child process on a free 127.0.0.1 port.

A child process, not moto's ``ThreadedMotoServer`` thread: moto keeps its state in module globals,
so an in-process server would share (and lose, on every ``mock_aws`` reset) state with tests that use
moto's decorators; a child also gets its own core for the GIL-heavy request handling.

The child corrects moto behaviours that differ from AWS (``_disable_moto_sqs_push``: no push of
SQS messages to mapped functions; ``_keep_queue_policy_on_other_updates``: SetQueueAttributes keeps
a policy it does not name, also when two updates race; ``_echo_transition_default_minimum_object_size``:
a bucket lifecycle configuration reads back with the TransitionDefaultMinimumObjectSize it was put with;
``_skip_statements_whose_condition_fails``: a policy statement whose condition is not met does not apply;
``_version_functions_like_lambda``: version numbers are never reused, a version an alias points to or
an alias cannot be deleted, ListAliases honours FunctionVersion, and an event source mapping on an
alias or version keeps that qualified ARN). It serves Lambda's recursion-config API, which moto lacks,
and adds one route to moto's WSGI app,
``GET /_stepwell/lambda-code?region=..&function=..`` (a name, optionally ``name:version``), that returns
a function's deployed zip: moto's GetFunction answers with an S3 location it never serves (the same one
for every version), and the local Lambda runtime needs the code terraform uploaded for each version.

The long waits of a ``terraform apply`` here are not answers that differ from what was put: the AWS
provider (5.100) reads a resource back until it matched a fixed number of times in a row, as against
AWS, and moto's answers match from the first read. Each SQS queue, redrive policy and queue policy
(create, update and delete) waits 6 matching reads 5 s apart (25 s), a bucket lifecycle configuration
10 s and then 10 matching reads 5 s apart (55 s), a new Lambda function 5 s before its first read.

Run as ``python -m stepwell.testing.moto_server [--host H] [--port P]``; it prints
``STEPWELL_MOTO_PORT=<port>`` on stdout once it listens, and exits when its parent dies.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any
from urllib.parse import parse_qs, unquote, urlencode

READY_PREFIX = "STEPWELL_MOTO_PORT="
LAMBDA_CODE_PATH = "/_stepwell/lambda-code"
DEFAULT_ACCOUNT_ID = "123456789012"
START_TIMEOUT_SECONDS = 60.0

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def _lambda_code_bytes(account_id: str, region: str, function_name: str) -> bytes:
    from moto.awslambda.models import lambda_backends

    # moto resolves "name:qualifier" (a version or an alias) to that version's own copy of the code.
    function = lambda_backends[account_id][region].get_function(function_name)
    code: bytes = function.code_bytes
    return code


# Lambda's recursion-config API (PutFunctionRecursionConfig, GetFunctionRecursionConfig), which moto
# lacks: the module sets the worker's to Allow.
_RECURSION_CONFIG_PATH = re.compile(r"^/2024-08-31/functions/(?P<function>[^/]+)/recursion-config$")
_RECURSIVE_LOOP_VALUES = ("Allow", "Terminate")
_SIGNED_REGION = re.compile(r"Credential=[^/]+/[0-9]{8}/(?P<region>[a-z0-9-]+)/")


def _json_answer(start_response: StartResponse, status: str, answer: Mapping[str, Any]) -> list[bytes]:
    body = json.dumps(answer).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _recursion_config(environ: dict[str, Any], start_response: StartResponse, function: str) -> list[bytes]:
    """The function's recursive loop setting, kept on moto's function (Terminate, Lambda's default, until
    one is put); a function moto does not know is a ResourceNotFoundException, as in Lambda."""
    from moto.awslambda.models import lambda_backends

    signed = _SIGNED_REGION.search(environ.get("HTTP_AUTHORIZATION", ""))
    region = signed.group("region") if signed else "us-east-1"
    try:
        target = lambda_backends[DEFAULT_ACCOUNT_ID][region].get_function(unquote(function))
    except Exception:  # moto raises its own not-found types
        return _json_answer(
            start_response,
            "404 Not Found",
            {"__type": "ResourceNotFoundException", "Message": f"Function not found: {unquote(function)}"},
        )
    if environ.get("REQUEST_METHOD") == "PUT":
        length = int(environ.get("CONTENT_LENGTH") or 0)
        value = json.loads(environ["wsgi.input"].read(length) or b"{}").get("RecursiveLoop")
        if value not in _RECURSIVE_LOOP_VALUES:
            return _json_answer(
                start_response,
                "400 Bad Request",
                {
                    "__type": "ValidationException",
                    "message": f"RecursiveLoop {value!r} is not one of {list(_RECURSIVE_LOOP_VALUES)}",
                },
            )
        setattr(target, "stepwell_recursive_loop", value)  # noqa: B010 (an attribute moto does not declare)
    return _json_answer(
        start_response, "200 OK", {"RecursiveLoop": getattr(target, "stepwell_recursive_loop", "Terminate")}
    )


def _with_lambda_code_route(app: WsgiApp) -> WsgiApp:
    def wrapped(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        recursion = _RECURSION_CONFIG_PATH.match(environ.get("PATH_INFO", ""))
        if recursion is not None:
            return _recursion_config(environ, start_response, recursion.group("function"))
        if environ.get("PATH_INFO") != LAMBDA_CODE_PATH:
            return app(environ, start_response)
        query = parse_qs(environ.get("QUERY_STRING", ""))
        region = query.get("region", [""])[0]
        function_name = query.get("function", [""])[0]
        account_id = query.get("account", [DEFAULT_ACCOUNT_ID])[0]
        try:
            body = _lambda_code_bytes(account_id, region, function_name)
        except Exception as error:  # moto raises its own not-found types; any failure is a 404 here
            message = f"no code for function {function_name!r} in {region!r}: {error}".encode()
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [message]
        start_response("200 OK", [("Content-Type", "application/zip"), ("Content-Length", str(len(body)))])
        return [body]

    return wrapped


class _UnpushedMappings(dict[str, Any]):
    """Stands in for a queue's record of its Lambda event source mappings, and records none."""

    def __setitem__(self, key: str, value: Any) -> None:
        return None


def _disable_moto_sqs_push() -> None:
    """moto "invokes" a mapped function synchronously inside SendMessage, in Docker; without Docker
    that receives every visible message again and again (raising receive counts until they redrive).
    Lambda polls instead, and so does the harness's runtime: queues here never learn their mappings
    (the Lambda API still lists them)."""
    from moto.sqs.models import Queue

    original_init = Queue.__init__

    def init_without_push(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.lambda_event_source_mappings = _UnpushedMappings()

    Queue.__init__ = init_without_push  # type: ignore[method-assign]


def _keep_queue_policy_on_other_updates() -> None:
    """moto's SetQueueAttributes drops a queue's Policy whenever the call does not name it, so setting
    the redrive policy (or a visibility timeout) after the queue policy silently removes the policy;
    SQS keeps attributes a call does not mention. Keep it here too, one update at a time: Terraform sets
    the redrive policy and the queue policy concurrently, and a policy set between another update's read
    of the old one and moto's reset would be lost."""
    from moto.sqs.models import Queue

    original_set_attributes = Queue._set_attributes
    updating = threading.Lock()

    def set_attributes_keeping_policy(
        self: Any, attributes: dict[str, Any], now: float | None = None
    ) -> None:
        with updating:
            previous_policy = getattr(self, "policy", None)
            original_set_attributes(self, attributes, now)
            if "Policy" not in attributes and previous_policy is not None:
                self.policy = previous_policy

    Queue._set_attributes = set_attributes_keeping_policy  # type: ignore[method-assign]


TRANSITION_SIZE_HEADER = "x-amz-transition-default-minimum-object-size"
# S3's default for a lifecycle configuration put without the header (general purpose buckets, since 2024-09).
DEFAULT_TRANSITION_SIZE = "all_storage_classes_128K"


def _echo_transition_default_minimum_object_size() -> None:
    """moto answers GetBucketLifecycleConfiguration with TransitionDefaultMinimumObjectSize
    all_storage_classes_128K whatever was put. S3 answers the value put with the configuration (its
    header on PutBucketLifecycleConfiguration, the default when absent), and the AWS provider reads the
    configuration back until that value matches: a root that puts varies_by_storage_class would wait
    out its 3-minute timeout and fail. Keep the value put, per bucket, and answer it on both calls."""
    from moto.s3.responses import S3Response

    original_put = S3Response._bucket_response_put
    original_get = S3Response.get_bucket_lifecycle

    def with_size_header(headers: dict[str, Any], size: str) -> dict[str, Any]:
        kept = {name: value for name, value in headers.items() if name.lower() != TRANSITION_SIZE_HEADER}
        return {**kept, TRANSITION_SIZE_HEADER: size}

    def bucket_response_put(self: Any, request: Any, bucket_name: str, querystring: dict[str, Any]) -> Any:
        answer = original_put(self, request, bucket_name, querystring)
        if "lifecycle" not in querystring or isinstance(answer, tuple):  # a tuple: moto refused the put
            return answer
        size = request.headers.get(TRANSITION_SIZE_HEADER) or DEFAULT_TRANSITION_SIZE
        # An attribute moto does not declare, on the bucket so that a reset drops it with the bucket.
        self.backend.get_bucket(bucket_name).stepwell_transition_size = size
        return 200, with_size_header({}, size), ""

    def get_bucket_lifecycle(self: Any) -> Any:
        status, headers, body = original_get(self)
        size = getattr(self.backend.get_bucket(self.bucket_name), "stepwell_transition_size", None)
        return status, with_size_header(dict(headers), size or DEFAULT_TRANSITION_SIZE), body

    S3Response._bucket_response_put = bucket_response_put  # type: ignore[method-assign]
    S3Response.get_bucket_lifecycle = get_bucket_lifecycle  # type: ignore[method-assign]


def _check_retention_without_counting_messages() -> None:
    """moto checks each message it receives against the queue's retention period by building all of the
    queue's attributes, which counts every message in the queue: a receive costs O(messages x batch) and
    a busy queue (thousands of delayed copies in `make chaos`) spends the server's one thread there. The
    same check, reading the one attribute it needs."""
    from moto.core.utils import unix_time
    from moto.sqs.models import Message, SQSBackend

    def is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Message) -> bool:
        retention_period = int(self.get_queue(queue_name).message_retention_period)
        sent_at = (message.sent_timestamp or 0) / 1000  # set when the message was sent
        return bool(retention_period + sent_at > unix_time())

    SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period  # type: ignore[method-assign]


def _sort_items_by_plain_key_values() -> None:
    """moto answers every Query of a global secondary index by sorting all of the table's items, comparing
    its key wrappers in Python (a Decimal built per comparison for numbers); as tables grow that sort
    becomes most of the server's time. The same order, from the key values computed once per item."""
    from moto.dynamodb.models.dynamo_type import Item
    from moto.dynamodb.models.table import Table

    def sort_key(item: Item) -> Any:
        hash_value = item.hash_key.cast_value
        return (hash_value, item.range_key.cast_value) if item.range_key else hash_value

    def all_items(self: Any) -> list[Item]:
        items: list[Item] = []
        for hash_set in self.items.values():
            items.extend(hash_set.values() if self.range_key_attr else [hash_set])
        return sorted(items, key=sort_key)

    Table.all_items = all_items  # type: ignore[method-assign]


def _skip_statements_whose_condition_fails() -> None:
    """moto passes no condition values (aws:SecureTransport, ...) to bucket policies and counts a
    condition on a missing key as met, so the payload bucket's "deny without TLS" statement refuses
    every object request; and it answers DENIED for any statement whose condition fails, Allow or Deny.
    In AWS a condition on a missing key is not met (except with ...IfExists and Null), and a statement
    whose condition is not met does not apply: so here."""
    from moto.iam.access_control import IAMPolicyStatement, PermissionResult

    original_is_action_permitted = IAMPolicyStatement.is_action_permitted

    def is_action_permitted(
        self: Any,
        action: str,
        resource: str = "*",
        principal: str | None = None,
        incoming_condition_values: dict[str, str] | None = None,
    ) -> PermissionResult:
        values = incoming_condition_values or {}
        conditions = self._statement.get("Condition") or {}
        missing_key = any(
            key not in values
            for operator, keys in conditions.items()
            if not operator.endswith("IfExists") and operator != "Null"
            for key in keys
        )
        if missing_key or not self._check_conditions(incoming_condition_values):
            return PermissionResult.NEUTRAL
        return original_is_action_permitted(self, action, resource, principal, incoming_condition_values)

    IAMPolicyStatement.is_action_permitted = is_action_permitted  # type: ignore[method-assign]


def _version_functions_like_lambda() -> None:
    """moto numbers a new version len(versions) + 1, so after a version is deleted the next publish
    reuses a number (two versions "3"); Lambda never reuses one. moto deletes a version an alias
    points to, and DeleteFunction with an alias qualifier deletes the alias's version; Lambda refuses
    both. moto's ListAliases ignores FunctionVersion. And an event source mapping created on an
    alias reports (and keeps) the version the alias pointed to then, where Lambda keeps the alias's
    ARN, so moving the alias moves what the mapping invokes."""
    from moto.awslambda.exceptions import InvalidParameterValueException, LambdaClientError
    from moto.awslambda.models import EventSourceMapping, LambdaBackend, LambdaStorage
    from moto.awslambda.responses import LambdaResponse
    from moto.awslambda.utils import make_function_arn

    class ResourceConflict(LambdaClientError):
        code = 409

        def __init__(self, message: str) -> None:
            super().__init__("ResourceConflictException", message)

    def publish_version(self: Any, name_or_arn: str, description: str = "") -> Any:
        function = self.get_function_by_name_or_arn_forbid_qualifier(name_or_arn)
        versions = self._functions[function.function_name]["versions"]
        if versions and not function.code_or_config_updated:
            return versions[-1]  # nothing changed since the last publish: Lambda returns that version
        function.code_or_config_updated = False
        # The highest number ever published, kept on the storage (a moto reset starts it again).
        highest: dict[str, int] = self.__dict__.setdefault("stepwell_highest_version", {})
        number = max([highest.get(function.function_name, 0), *(int(v.version) for v in versions)]) + 1
        published = copy.copy(function)
        published.set_version(number)
        if description:
            published.description = description
        versions.append(published)
        self._arns[published.function_arn] = published
        highest[function.function_name] = number
        return published

    original_del_function = LambdaStorage.del_function

    def del_function(self: Any, name_or_arn: str, qualifier: str | None = None) -> None:
        _, name, qualifier_in_arn = self.split_function_arn(name_or_arn)
        qualifier = qualifier_in_arn or qualifier
        if qualifier and qualifier != "$LATEST":
            if not qualifier.isdigit():
                raise InvalidParameterValueException(
                    f"Deletion of aliases is not supported: {qualifier!r} is not a version number"
                )
            aliases = self._aliases.get(make_function_arn(self.region_name, self.account_id, name), {})
            referencing = sorted(
                alias.name for alias in aliases.values() if alias.function_version == qualifier
            )
            if referencing:
                raise ResourceConflict(
                    f"Unable to delete version {qualifier} of {name} because the following aliases "
                    f"reference it: {referencing}"
                )
        original_del_function(self, name_or_arn, qualifier)
        if not qualifier:  # a function created again under this name starts at version 1, as in Lambda
            self.__dict__.get("stepwell_highest_version", {}).pop(name, None)

    original_list_aliases = LambdaResponse.list_aliases

    def list_aliases(self: Any) -> Any:
        status, headers, body = original_list_aliases(self)
        wanted = self.querystring.get("FunctionVersion", [None])[0]
        if wanted is None:
            return status, headers, body
        answer = json.loads(body)
        answer["Aliases"] = [alias for alias in answer["Aliases"] if alias["FunctionVersion"] == wanted]
        return status, headers, json.dumps(answer)

    def qualified_function_arn(backend: Any, function_name: str) -> str | None:
        """The ARN a mapping on ``function_name`` reports: qualified when the name is."""
        _, name, qualifier = backend._lambdas.split_function_arn(function_name)
        if qualifier is None:
            return None
        return f"{make_function_arn(backend.region_name, backend.account_id, name)}:{qualifier}"

    original_create_mapping = LambdaBackend.create_event_source_mapping
    original_update_mapping = LambdaBackend.update_event_source_mapping

    def create_event_source_mapping(self: Any, spec: dict[str, Any]) -> EventSourceMapping:
        mapping = original_create_mapping(self, spec)
        qualified = qualified_function_arn(self, spec.get("FunctionName", ""))
        if qualified is not None:
            mapping.function_arn = qualified
        return mapping

    def update_event_source_mapping(self: Any, uuid: str, spec: dict[str, Any]) -> EventSourceMapping | None:
        mapping = original_update_mapping(self, uuid, spec)
        if mapping is not None and "FunctionName" in spec:
            mapping.function_arn = qualified_function_arn(self, spec["FunctionName"]) or mapping.function_arn
        return mapping

    LambdaStorage.publish_version = publish_version  # type: ignore[method-assign]
    LambdaStorage.del_function = del_function  # type: ignore[method-assign]
    LambdaResponse.list_aliases = list_aliases  # type: ignore[method-assign]
    LambdaBackend.create_event_source_mapping = create_event_source_mapping  # type: ignore[method-assign]
    LambdaBackend.update_event_source_mapping = update_event_source_mapping  # type: ignore[method-assign]


def _deliver_events_to_sns_targets() -> None:
    """moto's rules deliver to log groups, archives, queues and buses, and raise NotImplementedError (a
    500 for the whole PutEvents) for an SNS topic target. EventBridge publishes the event (its input
    transformed, as for the other targets) to the topic: do that, and leave every other target to moto."""
    import copy
    import json

    from moto.events.models import Rule
    from moto.sns.models import sns_backends
    from moto.utilities.arns import parse_arn

    original_send = Rule.send_to_targets

    def send_to_targets(self: Any, original_event: Any, transform_input: bool = True) -> None:
        topics = [target for target in self.targets if parse_arn(target["Arn"]).service == "sns"]
        if not topics or not self.event_pattern.matches_event(original_event):
            original_send(self, original_event, transform_input)
            return
        # A copy with the other targets: the rule itself is shared by concurrent PutEvents requests.
        without_topics = copy.copy(self)
        without_topics.targets = [target for target in self.targets if target not in topics]
        original_send(without_topics, original_event, transform_input)
        for target in topics:
            arn = parse_arn(target["Arn"])
            message = original_event if target.get("Input") is None else json.loads(target["Input"])
            sns_backends[arn.account][arn.region].publish(json.dumps(message), arn=target["Arn"])

    Rule.send_to_targets = send_to_targets  # type: ignore[method-assign]


def _exit_when_parent_dies(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(0)
        time.sleep(1.0)


def serve(host: str, port: int, enforce_iam: bool = False) -> None:
    """Serve moto (plus the lambda-code route) forever; print the bound port once listening.
    ``enforce_iam``: authorize requests past moto's free ones (``INITIAL_NO_AUTH_ACTION_COUNT``) by the
    caller's IAM policies (``stepwell.testing.moto_iam``)."""
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    _disable_moto_sqs_push()
    _keep_queue_policy_on_other_updates()
    _echo_transition_default_minimum_object_size()
    _check_retention_without_counting_messages()
    _sort_items_by_plain_key_values()
    _skip_statements_whose_condition_fails()
    _version_functions_like_lambda()
    _deliver_events_to_sns_targets()
    if enforce_iam:
        from stepwell.testing import moto_iam

        moto_iam.install()
    app = _with_lambda_code_route(DomainDispatcherApplication(create_backend_app))
    server = make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler)
    threading.Thread(target=_exit_when_parent_dies, args=(os.getppid(),), daemon=True).start()
    print(f"{READY_PREFIX}{server.server_address[1]}", flush=True)
    server.serve_forever()


class MotoServer:
    """A running moto server child process."""

    def __init__(
        self, process: subprocess.Popen[str], host: str, port: int, log: IO[bytes] | None = None
    ) -> None:
        self.process = process
        self.host = host
        self.port = port
        self._log = log

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def lambda_code(self, region: str, function_name: str, account_id: str = DEFAULT_ACCOUNT_ID) -> bytes:
        """The deployed zip of a function (``name`` or ``name:version``), as moto stored it."""
        query = urlencode({"region": region, "function": function_name, "account": account_id})
        url = f"{self.endpoint_url}{LAMBDA_CODE_PATH}?{query}"
        with urllib.request.urlopen(url, timeout=30) as response:
            body: bytes = response.read()
        return body

    def reset(self) -> None:
        """Drop every resource moto holds (moto's own reset API)."""
        request = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=30):
            pass

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        if self._log is not None:
            self._log.close()


def _read_ready_port(stdout: IO[str], process: subprocess.Popen[str]) -> int:
    found: list[int] = []

    def reader() -> None:
        for line in stdout:
            if line.startswith(READY_PREFIX):
                found.append(int(line[len(READY_PREFIX) :].strip()))
                return

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    thread.join(START_TIMEOUT_SECONDS)
    if not found:
        process.kill()
        process.wait()
        raise RuntimeError(
            f"moto server did not report its port within {START_TIMEOUT_SECONDS:.0f} s "
            f"(exit code {process.returncode})"
        )
    return found[0]


def start_moto_server(
    host: str = "127.0.0.1",
    log_path: str | None = None,
    enforce_iam: bool = False,
    free_requests: int = 0,
) -> MotoServer:
    """Start moto's server on a free port of ``host``; the caller stops it (or use ``moto_server()``).
    ``enforce_iam``: every request after the first ``free_requests`` (moto's INITIAL_NO_AUTH_ACTION_COUNT,
    read by the server process at import) must be signed with a known key and allowed by IAM."""
    # The log file outlives this call: the server closes it when it stops.
    log = open(log_path, "ab") if log_path else None  # noqa: SIM115
    command = [sys.executable, "-m", "stepwell.testing.moto_server", "--host", host, "--port", "0"]
    environment = None
    if enforce_iam:
        command.append("--enforce-iam")
        environment = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(free_requests)}
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=log if log is not None else subprocess.DEVNULL,
        text=True,
        env=environment,
    )
    assert process.stdout is not None
    port = _read_ready_port(process.stdout, process)
    server = MotoServer(process, host, port, log)
    _wait_until_answering(server)
    return server


def _wait_until_answering(server: MotoServer) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        try:
            with urllib.request.urlopen(f"{server.endpoint_url}/moto-api/data.json", timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline or server.process.poll() is not None:
                server.stop()
                raise RuntimeError(f"moto server at {server.endpoint_url} never answered") from None
            time.sleep(0.1)


@contextmanager
def moto_server(
    host: str = "127.0.0.1", log_path: str | None = None, enforce_iam: bool = False, free_requests: int = 0
) -> Iterator[MotoServer]:
    """Context manager: a moto server for the duration of the block (``start_moto_server``'s options)."""
    server = start_moto_server(host, log_path, enforce_iam, free_requests)
    try:
        yield server
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="moto's server plus Stepwell's lambda-code route")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--enforce-iam", action="store_true", help="authorize requests by IAM (moto_iam)")
    args = parser.parse_args(argv)
    serve(args.host, args.port, enforce_iam=args.enforce_iam)


if __name__ == "__main__":
    main()
