"""Users' own durable functions on the deployed stack, on each backend (issue 41): a subset of the
conformance cases (tests/deploy/remote_functions.py's SUBSET) with their JavaScript handlers
(@aws/durable-execution-sdk-js) and their Python handler files, each language deployed as a Lambda
function of its own beside the module and registered with durable_functions before the apply every
deployed test shares. Every case of both
languages starts at once through the client; the worker invokes the functions asynchronously, the backend
runs them (the harness's runtime on moto, LocalStack's executor there), their SDKs checkpoint through the
API function, and their ends come back to the worker as destination records; the conformance runner judges
each (tests/conformance/deployed_backend.run_cases). A failure names the case and the language.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from deployed_backend import DeployedTarget, run_cases
from runner import CaseResult
from stepwell.testing.deployed_fixtures import DeployedStack
from stepwell.testing.lambda_runtime import BackendLambdaDriver, FunctionSpec, LambdaRuntime
from stepwell.testing.localstack import set_function_environment

from deploy.remote_functions import (
    SUBSET,
    Language,
    RemoteCasesApi,
    alias_name,
    copy_alias_invoke_config_to_version,
    language_copies,
    remote_workflow,
    subset_cases,
)
from tests.api.iam_url_front import IamFunctionUrlFront, role_session, url_principals
from tests.remote.node_functions import node_missing_reason

IN_CI = os.environ.get("CI", "").lower() == "true"


@dataclass(frozen=True)
class RemoteRun:
    backend: str
    seconds: float
    languages: list[Language]
    results: dict[tuple[Language, str], CaseResult]
    refusals: list[str]


@pytest.fixture(scope="session")
def remote_functions(
    deployed_stack: DeployedStack, lambda_runtime: LambdaRuntime | BackendLambdaDriver
) -> Iterator[tuple[dict[Language, str], IamFunctionUrlFront]]:
    """The deployed functions by language, running with their role's session keys and the API front as
    their AWS_ENDPOINT_URL_LAMBDA (on moto through the runtime's function_environment, on LocalStack through
    set_function_environment)."""
    deployed = deployed_stack.outputs["stepwell_remote_cases"]
    functions = {Language(key): str(name) for key, name in deployed["functions"].items()}
    backend = deployed_stack.backend
    api_function = str(deployed["api_function"])

    def invoke_api(event: dict[str, Any]) -> Any:
        result = lambda_runtime.invoke(api_function, event)
        if result.error is not None:
            raise RuntimeError(f"the API function failed: {result.error}")
        return result.payload

    front = IamFunctionUrlFront(
        invoke_api, backend.region, url_principals(backend.client("lambda"), api_function)
    )
    identity = front.register(role_session(backend.client("sts"), str(deployed["role_arn"]), "remote-cases"))
    variables = {"AWS_ENDPOINT_URL_LAMBDA": front.url, **identity.environment()}
    names = set(functions.values())
    if not isinstance(lambda_runtime, LambdaRuntime):
        for name in names:
            set_function_environment(backend.endpoint_url, name, variables)
            copy_alias_invoke_config_to_version(backend.client("lambda"), name)
        try:
            yield functions, front
        finally:
            for name in names:
                set_function_environment(backend.endpoint_url, name, None)
            front.close()
        return
    before = lambda_runtime.function_environment

    def environment(spec: FunctionSpec) -> Mapping[str, str]:
        if spec.name in names:
            return variables
        return before(spec) if before is not None else {}

    lambda_runtime.function_environment = environment
    try:
        yield functions, front
    finally:
        lambda_runtime.function_environment = before
        front.close()


@pytest.fixture(scope="session")
def remote_run(
    deployed_stack: DeployedStack,
    deployed_target: DeployedTarget,
    remote_functions: tuple[dict[Language, str], IamFunctionUrlFront],
) -> RemoteRun:
    """Every case of the subset in every deployed language, at once, on this backend's stack."""
    functions, front = remote_functions
    languages = sorted(functions, key=lambda language: language.value)
    copies, languages_of = language_copies(subset_cases(), languages)
    started = time.monotonic()
    results = run_cases(copies, deployed_target, api=RemoteCasesApi(deployed_target.client, languages_of))
    seconds = time.monotonic() - started
    by_key = {(languages_of[id(result.case)], result.case.test_id): result for result in results}
    print(
        f"\nremote functions on {deployed_stack.backend.name}: {len(results)} executions in {seconds:.1f} s"
    )
    return RemoteRun(deployed_stack.backend.name, seconds, languages, by_key, list(front.refusals))


def test_the_registrations_reach_the_intelligent_tiering_parameter(deployed_stack: DeployedStack) -> None:
    """Every case's registration in each deployed language is in the module's parameter (Intelligent-Tiering,
    which the backend took), with its function, its alias, and the role and timeout read from the function."""
    deployed = deployed_stack.outputs["stepwell_remote_cases"]
    ssm = deployed_stack.backend.client("ssm")
    value = ssm.get_parameter(Name=deployed["parameter"], WithDecryption=True)["Parameter"]["Value"]
    registered = json.loads(value)["functions"]
    functions = {Language(key): str(name) for key, name in deployed["functions"].items()}
    for language, function_name in functions.items():
        for case in subset_cases():
            registration = registered.get(remote_workflow(case, language))
            assert registration is not None, (
                f"{case.test_id} ({language.label}) is not registered: {sorted(registered)}"
            )
            assert registration["function_arn"].endswith(f":function:{function_name}"), registration
            assert registration["qualifier"] == alias_name(case), registration
            assert (registration["role_arn"], registration["timeout_seconds"]) == (deployed["role_arn"], 60)


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("language", list(Language), ids=[language.label for language in Language])
@pytest.mark.parametrize("case_id", SUBSET)
def test_a_case_passes_as_a_deployed_function(
    remote_run: RemoteRun, language: Language, case_id: str, record_property: Callable[[str, object], None]
) -> None:
    if language is Language.JAVASCRIPT:
        missing = node_missing_reason(shutil.which("node"))
        if language not in remote_run.languages or missing is not None:
            reason = missing or "the JavaScript function was not deployed (make node)"
            assert not IN_CI, f"CI=true but JavaScript functions cannot run: {reason}"
            pytest.skip(reason)
    record_property("stepwell_remote_functions_seconds", (remote_run.backend, remote_run.seconds))
    result = remote_run.results[(language, case_id)]
    assert result.passed, "\n".join(
        [
            f"{case_id} ({language.label}, as a deployed function on {remote_run.backend}):",
            *result.errors,
            "actual history:",
            *(str(event) for event in result.history),
        ]
    )
    assert not remote_run.refusals, remote_run.refusals
