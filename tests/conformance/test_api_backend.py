"""The API backend in-process (local_api_backend.py): the subset of cases the deployed stack runs through
AWS's durable execution API (api_backend.SUBSET) passes here too, through boto3's `lambda` client, the
API's handler and the AWS_IAM front end, on the local engine; the history it reads over several pages is
the engine's history."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from api_backend import SUBSET, LambdaApiExecutions
from local_api_backend import LocalApiBackend
from runner import Case, discover_cases, load_handler_module, run_case, start_case
from stepwell.features.lambda_api.arns import ArnContext

CASES = {case.test_id: case for case in discover_cases()}
# Cases whose ExpectedLogs are found by the ARN the API answered (AWS's filter): the worker hands the SDK
# that ARN as its DurableExecutionArn (stepwell.core.arns), so the durable logger's records carry it.
LOGS_BY_ARN = ("step/1-7", "step/1-17", "step/1-18", "child/3-11", "child/3-17")


@pytest.fixture
def backend() -> Iterator[LocalApiBackend]:
    made = LocalApiBackend()
    yield made
    made.close()


def _case(case_id: str) -> Case:
    if case_id not in CASES:
        pytest.skip(f"case {case_id} is absent: AWS's shared conformance cases are not here")
    return CASES[case_id]


@pytest.mark.parametrize("case_id", SUBSET)
def test_the_subset_passes_through_the_api(backend: LocalApiBackend, case_id: str) -> None:
    result = run_case(_case(case_id), backend)
    assert result.passed, "\n".join([*result.errors, "history:", *(str(event) for event in result.history)])


@pytest.mark.parametrize("case_id", LOGS_BY_ARN)
def test_log_records_are_found_by_the_apis_arn(backend: LocalApiBackend, case_id: str) -> None:
    case = _case(case_id)
    assert case.data.get("ExpectedLogs"), f"{case_id} expects log records"
    result = run_case(case, backend)
    assert result.passed, "\n".join(result.errors)


def test_the_history_read_over_pages_is_the_engines(backend: LocalApiBackend) -> None:
    case = _case("map/map-1")
    _, event = start_case(case)
    arn = backend.start(case, load_handler_module(case), event)
    backend.run_until_idle()
    api: LambdaApiExecutions = backend.api
    api.page_size = 5
    api.pages_read = 0
    through_api = api.history(arn)
    engine = backend.stepwell.history(api.engine_id(arn))
    assert len(engine) > 2 * api.page_size
    assert api.pages_read == -(-len(engine) // api.page_size)
    assert [(each["EventId"], each["EventType"]) for each in through_api] == [
        (each["EventId"], each["EventType"]) for each in engine
    ]
    assert backend.describe(arn)["Status"] == "SUCCEEDED"


def test_an_execution_name_is_the_cases_within_the_models_bounds(backend: LocalApiBackend) -> None:
    ours = CASES["map/map-1"]  # ours: always here
    long_case = Case("wait_for_callback", "x" * 80, ours.yaml_path, ours.handler_path, {})
    name = backend.api.execution_name(long_case)
    assert len(name) == 64 and name.startswith("wait_for_callback-xxx")
    assert name.endswith(f"-{backend.api.run_tag}")
    assert backend.api.execution_name(ours) == f"map-map-1-{backend.api.run_tag}"


@pytest.mark.parametrize("page_size", [0, 1001])
def test_page_size_is_the_apis_max_items_range(page_size: int) -> None:
    with pytest.raises(ValueError, match="page_size must be 1 to 1000"):
        LambdaApiExecutions(object(), ArnContext("aws", "us-east-1", "123456789012"), page_size)
