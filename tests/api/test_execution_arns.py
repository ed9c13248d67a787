"""One ARN per execution (stepwell.core.arns): the handler is handed the ARN the API answers for its
execution, in its Lambda context's account and region (the harness's default without one), finds its
input under the ARN's last segment, and its log records carry that ARN; the stored log is unchanged."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.lambda_service import Operation, OperationStatus, OperationType
from stepwell.config import StepwellConfig
from stepwell.core.arns import (
    ArnContext,
    NamesNoExecution,
    NotAnExecutionArn,
    arn_context_of,
    as_handed,
    execution_id_of,
    ids_as_handed,
    parse_execution_arn,
)
from stepwell.core.service import StoreServiceClient
from stepwell.core.worker import InvocationContext, Worker
from stepwell.testing.local import LocalStepwell
from stepwell.wiring.build import deployment_arns

from tests.api.conftest import ARNS

ELSEWHERE = ArnContext("aws", "eu-west-1", "210987654321")
WORKER_ARN = f"arn:aws:lambda:{ELSEWHERE.region}:{ELSEWHERE.account}:function:stepwell-worker:live"
SEEN: list[str] = []


@durable_execution
def echo(event: Any, context: DurableContext) -> Any:
    SEEN.append(context.state.durable_execution_arn)
    context.logger.info("echoing")
    return context.step(lambda _: event["say"], name="say")


@pytest.fixture
def local() -> LocalStepwell:
    SEEN.clear()
    made = LocalStepwell()
    made.register("echo", echo)
    return made


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.arns: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        arn = getattr(record, "executionArn", None)
        if isinstance(arn, str):
            self.arns.append(arn)


def test_the_handler_is_handed_the_apis_arn_and_its_logs_carry_it(local: LocalStepwell) -> None:
    records, root = _Records(), logging.getLogger()
    level = root.level
    root.addHandler(records)
    root.setLevel(logging.INFO)
    try:
        execution_id = local.start("echo", {"say": "hi"}, execution_name="e-1")
        local.run_until_idle()
    finally:
        root.removeHandler(records)
        root.setLevel(level)
    assert local.describe(execution_id)["Status"] == "SUCCEEDED"
    assert local.describe(execution_id)["Result"] == '"hi"'  # its input, found under the ARN's last segment
    arn = ARNS.execution_arn(execution_id)  # the harness's default: the local API backends' account
    assert ArnContext.local().execution_arn(execution_id) == arn
    assert set(SEEN) == {arn} and records.arns and set(records.arns) == {arn}
    assert ARNS.execution_id(arn) == execution_id
    # The log stores the EXECUTION operation under the execution id's last segment, as before.
    stored = local.engine.load_journal(execution_id).operations
    assert stored["e-1"].operation_type is OperationType.EXECUTION


def test_in_lambda_the_arn_is_in_the_worker_functions_account_and_region(local: LocalStepwell) -> None:
    execution_id = local.start("echo", {"say": "there"}, execution_name="e-2")
    context = InvocationContext("request-1")
    context.invoked_function_arn = WORKER_ARN  # type: ignore[attr-defined]
    Worker(local.engine).run(execution_id, context)
    local.run_until_idle()
    assert SEEN[0] == ELSEWHERE.execution_arn(execution_id)
    assert local.describe(execution_id)["Result"] == '"there"'


def test_arn_context_of_reads_a_lambda_context_or_keeps_the_default() -> None:
    context = InvocationContext("request-1")
    assert arn_context_of(context, ARNS) == ARNS  # no invoked_function_arn
    context.invoked_function_arn = "not an arn"  # type: ignore[attr-defined]
    assert arn_context_of(context, ARNS) == ARNS
    context.invoked_function_arn = WORKER_ARN  # type: ignore[attr-defined]
    assert arn_context_of(context, ARNS) == ELSEWHERE


def _op(op_id: str, op_type: OperationType) -> Operation:
    return Operation(operation_id=op_id, operation_type=op_type, status=OperationStatus.STARTED)


def test_as_handed_renames_only_the_execution_operation() -> None:
    execution_id = "default#echo#s/run-1"
    arn = ARNS.execution_arn(execution_id)
    stored = [_op("run-1", OperationType.EXECUTION), _op("abc", OperationType.STEP)]
    handed = as_handed(stored, execution_id=execution_id, arn=arn)
    assert [op.operation_id for op in handed] == [arn.rsplit("/", 1)[1], "abc"]
    assert [op.operation_id for op in stored] == ["run-1", "abc"]  # the stored ones never change
    # A step that happens to bear the instance id is not the EXECUTION operation.
    look_alike = [_op("run-1", OperationType.STEP)]
    assert as_handed(look_alike, execution_id=execution_id, arn=arn) == look_alike
    # Handed the Stepwell id (or an ARN ending as it does), nothing is renamed.
    assert as_handed(stored, execution_id=execution_id, arn=execution_id) == stored
    assert ids_as_handed(["run-1", "abc"], execution_id=execution_id, arn=arn) == [
        arn.rsplit("/", 1)[1],
        "abc",
    ]


def test_the_service_client_answers_with_the_handed_names_and_takes_either_name(local: LocalStepwell) -> None:
    execution_id = local.start("echo", {"say": "x"}, execution_name="e-3")
    record = local.record(execution_id)
    journal = local.engine.load_journal(execution_id)
    journal.start_execution('{"say": "x"}', local.clock.now())
    arn = ELSEWHERE.execution_arn(execution_id)
    client = StoreServiceClient(local.engine, record, journal, "owner-1", arn=arn)
    for name in (arn, execution_id):
        state = client.get_execution_state(name, client.token, "")
        assert [op.operation_id for op in state.operations] == [arn.rsplit("/", 1)[1]]
    assert client.updated_operation_ids() == [arn.rsplit("/", 1)[1]]
    with pytest.raises(ValueError, match="this client serves execution"):
        client.get_execution_state(ARNS.execution_arn(execution_id), client.token, "")


def test_an_arn_reads_back_as_its_execution_id() -> None:
    execution_id = "acme#orders.v2#order-7/run 1"
    arn = ELSEWHERE.execution_arn(execution_id)
    parsed = parse_execution_arn(arn)
    assert (parsed.account, parsed.region, parsed.execution_id) == ("210987654321", "eu-west-1", execution_id)
    assert execution_id_of(arn) == execution_id_of(execution_id) == execution_id
    with pytest.raises(NotAnExecutionArn, match="is not a durable execution ARN"):
        parse_execution_arn("arn:aws:lambda:eu-west-1:210987654321:function:orders")
    with pytest.raises(NamesNoExecution):
        parse_execution_arn(arn.replace(":orders.v2:", ":orders:"))
    with pytest.raises(ValueError):
        execution_id_of("no execution id")


def test_the_deployments_arns_come_from_its_resources_arns() -> None:
    base = {
        "name": "dev",
        "executions_table": "e",
        "operations_table": "o",
        "coordination_table": "c",
        "work_queue_url": "https://sqs.eu-west-1.amazonaws.com/210987654321/dev-work",
    }
    queue_arn = "arn:aws:sqs:eu-west-1:210987654321:dev-work"
    assert deployment_arns(StepwellConfig(**base, work_queue_arn=queue_arn)) == ELSEWHERE
    assert deployment_arns(StepwellConfig(**base)) is None
