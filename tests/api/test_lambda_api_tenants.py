"""Tenant-scoped principals (STEPWELL_API_TENANT_PRINCIPALS): a principal listed under tenants reaches only
their executions, for every class of operation it has; refusals are AccessDeniedException and never tell
whether what they name exists; unlisted principals keep deployment-wide access."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from stepwell.features.lambda_api.access import AccessPolicy, Caller
from stepwell.features.lambda_api.context import ApiSettings
from stepwell.features.lambda_api.settings import SettingsError, api_settings
from stepwell.features.lambda_api.tenants import TenantLimits

from tests.api.conftest import ACCOUNT, ARNS, OPERATOR, OPERATOR_ROLE, WORKFLOWS, ApiStack, api_stack
from tests.api.iam_url_front import Identity

ACME_ROLE = f"arn:aws:iam::{ACCOUNT}:role/acme-app"
GLOBEX_ROLE = f"arn:aws:iam::{ACCOUNT}:role/globex-app"
PARTNER_ACCOUNT = "210987654321"
ACME = Identity(
    "AKIAACME000000000001",
    "acme-secret",
    f"arn:aws:sts::{ACCOUNT}:assumed-role/acme-app/worker-1",
    ACCOUNT,
    "AROAACME:worker-1",
    "acme-session-token",
)
GLOBEX = Identity(
    "AKIAGLOBEX0000000001",
    "globex-secret",
    f"arn:aws:sts::{ACCOUNT}:assumed-role/globex-app/worker-2",
    ACCOUNT,
    "AROAGLOBEX:worker-2",
    "globex-session-token",
)
# A partner account's user: its account is listed under acme and globex, the user itself under globex.
PARTNER = Identity(
    "AKIAPARTNER000000001",
    "partner-secret",
    f"arn:aws:iam::{PARTNER_ACCOUNT}:user/sync",
    PARTNER_ACCOUNT,
    "AIDAPARTNER",
)
TENANTS = {
    "acme": [ACME_ROLE, PARTNER_ACCOUNT],
    "globex": [GLOBEX_ROLE, PARTNER_ACCOUNT, f"arn:aws:iam::{PARTNER_ACCOUNT}:user/sync"],
}
EVERYONE = [OPERATOR_ROLE, ACME_ROLE, GLOBEX_ROLE, PARTNER_ACCOUNT]


@pytest.fixture
def tenants() -> Iterator[ApiStack]:
    settings = ApiSettings(
        arns=ARNS,
        access=AccessPolicy.from_lists(read=EVERYONE, operate=EVERYONE, callbacks=EVERYONE),
        tenants=TenantLimits.from_json(json.dumps(TENANTS)),
        workflows=frozenset(WORKFLOWS),
        max_wait_seconds=5.0,
    )
    stack = api_stack(settings)
    yield stack
    stack.front.close()


def _start(client: Any, name: str, tenant: str | None, workflow: str = "approval") -> str:
    extra = {"TenantId": tenant} if tenant is not None else {}
    answer = client.invoke(
        FunctionName=workflow, Payload=b"{}", InvocationType="Event", DurableExecutionName=name, **extra
    )
    arn: str = answer["DurableExecutionArn"]
    return arn


def _refusal(call: Callable[[], Any]) -> dict[str, Any]:
    with pytest.raises(ClientError) as refused:
        call()
    response = refused.value.response
    return {
        "code": response["Error"]["Code"],
        "status": response["ResponseMetadata"]["HTTPStatusCode"],
        "message": response["Error"]["Message"],
    }


def test_a_tenant_principal_starts_executions_only_with_its_tenants_id(tenants: ApiStack) -> None:
    acme = tenants.client(ACME)
    arn = _start(acme, "mine", "acme")
    assert ARNS.execution_id(arn) == "acme#approval#mine/mine"
    for tenant in ("globex", None):
        refused = _refusal(lambda tenant=tenant: _start(acme, "theirs", tenant))  # type: ignore[misc]
        assert refused["code"] == "AccessDeniedException" and refused["status"] == 403
        assert ACME.arn in refused["message"] and "lambda:Invoke " in refused["message"]
        assert f"principal {ACME_ROLE} is limited to tenant acme" in refused["message"]
        assert f"(TenantId {tenant or 'default'})" in refused["message"]
    dry = _refusal(
        lambda: acme.invoke(FunctionName="greet", Payload=b"{}", InvocationType="DryRun", TenantId="globex")
    )
    assert dry["code"] == "AccessDeniedException"
    assert [record.execution_id for record in _records(tenants)] == ["acme#approval#mine/mine"]
    # An unlisted principal starts in any tenant, the default one included.
    operator = tenants.client(OPERATOR)
    assert ARNS.execution_id(_start(operator, "anyone", None)) == "default#approval#anyone/anyone"
    assert ARNS.execution_id(_start(operator, "theirs", "globex")).startswith("globex#")


def _records(stack: ApiStack) -> list[Any]:
    return stack.local.engine.list_executions(workflow="approval").items


DATA_PLANE = ("GetDurableExecutionState", "CheckpointDurableExecution")


def test_every_execution_operation_refuses_another_tenants_execution_as_it_does_a_missing_one(
    tenants: ApiStack,
) -> None:
    operator = tenants.client(OPERATOR)
    theirs = _start(operator, "theirs", "globex")
    ended = _start(operator, "ended", "globex")
    mine = _start(operator, "mine", "acme")
    tenants.local.run_until_idle()
    operator.stop_durable_execution(DurableExecutionArn=ended)
    missing = ARNS.execution_arn("globex#approval#nobody/nobody")
    acme = tenants.client(ACME)
    token = "dG9rZW4="
    calls: dict[str, Callable[[str], Any]] = {
        "GetDurableExecution": lambda arn: acme.get_durable_execution(DurableExecutionArn=arn),
        "GetDurableExecutionHistory": lambda arn: acme.get_durable_execution_history(DurableExecutionArn=arn),
        "GetDurableExecutionState": lambda arn: acme.get_durable_execution_state(
            DurableExecutionArn=arn, CheckpointToken=token
        ),
        "CheckpointDurableExecution": lambda arn: acme.checkpoint_durable_execution(
            DurableExecutionArn=arn, CheckpointToken=token
        ),
        "StopDurableExecution": lambda arn: acme.stop_durable_execution(DurableExecutionArn=arn),
        "PauseDurableExecution": lambda arn: acme.pause_durable_execution(DurableExecutionArn=arn),
        "ResumeDurableExecution": lambda arn: acme.resume_durable_execution(DurableExecutionArn=arn),
        "DeleteDurableExecution": lambda arn: acme.delete_durable_execution(DurableExecutionArn=arn),
    }
    for operation, call in calls.items():
        answers = []
        for arn in (theirs, ended, missing):
            refused = _refusal(lambda call=call, arn=arn: call(arn))  # type: ignore[misc]
            assert refused["code"] == "AccessDeniedException" and refused["status"] == 403, operation
            assert f"lambda:{operation} on resource: {arn} " in refused["message"]
            # The data plane is the registered functions' class, which acme's caller is not in at all.
            reason = "durable_functions" if operation in DATA_PLANE else "limited to tenant acme"
            assert reason in refused["message"], operation
            answers.append({**refused, "message": refused["message"].replace(arn, "<ARN>")})
        # The same answer whether the execution exists, has ended, or never was.
        assert answers[0] == answers[1] == answers[2], operation
        # By Stepwell id too: the id names the tenant as the ARN does.
        assert _refusal(lambda call=call: call(ARNS.execution_id(theirs)))["code"] == "AccessDeniedException"  # type: ignore[misc]
    assert tenants.local.describe(ARNS.execution_id(theirs))["Status"] == "RUNNING"
    assert tenants.local.describe(ARNS.execution_id(ended))["Status"] == "STOPPED"

    # Its own tenant's executions it reads and operates; a missing one of its tenant is not found.
    assert acme.get_durable_execution(DurableExecutionArn=mine)["Status"] == "RUNNING"
    assert acme.get_durable_execution_history(DurableExecutionArn=mine)["Events"]
    acme.pause_durable_execution(DurableExecutionArn=mine)
    acme.resume_durable_execution(DurableExecutionArn=mine)
    acme.stop_durable_execution(DurableExecutionArn=mine)
    with pytest.raises(acme.exceptions.ResourceNotFoundException):
        acme.get_durable_execution(DurableExecutionArn=ARNS.execution_arn("acme#approval#nobody/nobody"))
    # The other tenant's principal and an unlisted one reach theirs.
    assert tenants.client(GLOBEX).get_durable_execution(DurableExecutionArn=theirs)["Status"] == "RUNNING"
    assert operator.get_durable_execution(DurableExecutionArn=mine)["Status"] == "STOPPED"


def test_callbacks_of_another_tenant_are_refused_as_an_unknown_callback_id_is(tenants: ApiStack) -> None:
    operator = tenants.client(OPERATOR)
    theirs = ARNS.execution_id(_start(operator, "theirs", "globex"))
    mine = ARNS.execution_id(_start(operator, "mine", "acme"))
    tenants.local.run_until_idle()
    their_callback = tenants.local.callback_id(theirs)
    unknown = "cb" + "A" * 32
    acme = tenants.client(ACME)
    sends: dict[str, Callable[[str], Any]] = {
        "SendDurableExecutionCallbackSuccess": lambda callback: acme.send_durable_execution_callback_success(
            CallbackId=callback, Result=b'"ok"'
        ),
        "SendDurableExecutionCallbackFailure": lambda callback: acme.send_durable_execution_callback_failure(
            CallbackId=callback, Error={"ErrorType": "No"}
        ),
        "SendDurableExecutionCallbackHeartbeat": lambda callback: (
            acme.send_durable_execution_callback_heartbeat(CallbackId=callback)
        ),
    }
    for operation, send in sends.items():
        answers = []
        for callback in (their_callback, unknown):
            refused = _refusal(lambda send=send, callback=callback: send(callback))  # type: ignore[misc]
            assert refused["code"] == "AccessDeniedException" and refused["status"] == 403
            assert f"lambda:{operation} on resource: {callback} " in refused["message"]
            answers.append({**refused, "message": refused["message"].replace(callback, "<ID>")})
        assert answers[0] == answers[1], operation
    tenants.local.run_until_idle()
    assert tenants.local.describe(theirs)["Status"] == "RUNNING"

    acme.send_durable_execution_callback_success(CallbackId=tenants.local.callback_id(mine), Result=b'"ok"')
    tenants.local.run_until_idle()
    assert tenants.local.describe(mine)["Status"] == "SUCCEEDED"
    # An unlisted principal is told the truth: no such callback.
    with pytest.raises(operator.exceptions.ResourceNotFoundException):
        operator.send_durable_execution_callback_heartbeat(CallbackId=unknown)
    tenants.client(GLOBEX).send_durable_execution_callback_success(CallbackId=their_callback, Result=b"1")
    tenants.local.run_until_idle()
    assert tenants.local.describe(theirs)["Status"] == "SUCCEEDED"


def _pages(client: Any, **options: Any) -> list[list[str]]:
    pages: list[list[str]] = []
    marker: dict[str, str] = {}
    while True:
        answer = client.list_durable_executions_by_function(FunctionName="approval", **options, **marker)
        pages.append([ARNS.execution_id(item["DurableExecutionArn"]) for item in answer["DurableExecutions"]])
        if "NextMarker" not in answer:
            return pages
        marker = {"Marker": answer["NextMarker"]}


def test_the_listing_shows_a_tenant_principal_only_its_tenants_in_full_pages(tenants: ApiStack) -> None:
    operator = tenants.client(OPERATOR)
    acme_ids: list[str] = []
    globex_ids: list[str] = []
    for index in range(12):
        # Runs of other tenants' executions between acme's: globex's, then the default tenant's.
        tenant = "acme" if index % 4 == 0 else "globex" if index % 4 in (1, 2) else None
        arn = _start(operator, f"e{index}", tenant)
        {"acme": acme_ids, "globex": globex_ids}.get(tenant or "", []).append(ARNS.execution_id(arn))
        tenants.local.clock.advance(1.0)
    tenants.local.run_until_idle()

    acme = tenants.client(ACME)
    assert _pages(acme, MaxItems=2) == [acme_ids[::-1][:2], acme_ids[::-1][2:]]
    assert _pages(acme, MaxItems=2, ReverseOrder=True) == [acme_ids[:2], acme_ids[2:]]
    assert _pages(acme, MaxItems=1, Statuses=["RUNNING"]) == [[each] for each in acme_ids[::-1]]
    assert _pages(acme, DurableExecutionName="e1") == [[]]  # globex's
    globex = tenants.client(GLOBEX)
    assert _pages(globex, MaxItems=5) == [globex_ids[::-1][:5], globex_ids[::-1][5:]]
    # Limited by its account (acme, globex) and by itself (globex): only what both allow.
    assert _pages(tenants.client(PARTNER), MaxItems=10) == [globex_ids[::-1]]
    # An unlisted principal lists every tenant's.
    assert len(_pages(operator, MaxItems=1000)[0]) == 12


def test_a_scoped_listing_that_finds_nothing_in_time_says_so_without_telling_what_it_read(
    tenants: ApiStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator = tenants.client(OPERATOR)
    for index in range(8):
        _start(operator, f"g{index}", "globex")
    # Each look at the clock a second later: the listing's time runs out after its second read (of 1,
    # then 2 executions), with globex's executions still to read.
    clock = iter(float(tick) for tick in range(1000))
    tenants.handler.monotonic = lambda: next(clock)
    monkeypatch.setattr("stepwell.features.lambda_api.listing.LIST_SECONDS", 1.5)
    with pytest.raises(ClientError) as refused:
        tenants.client(ACME).list_durable_executions_by_function(FunctionName="approval", MaxItems=1)
    assert refused.value.response["Error"]["Code"] == "TooManyRequestsException"
    assert "StartedAfter" in refused.value.response["Error"]["Message"]


def test_a_caller_whose_limits_share_no_tenant_reaches_nothing() -> None:
    settings = ApiSettings(
        arns=ARNS,
        access=AccessPolicy.from_lists(read=EVERYONE, operate=EVERYONE, callbacks=EVERYONE),
        tenants=TenantLimits.from_json(json.dumps({"acme": [PARTNER_ACCOUNT], "globex": [PARTNER.arn]})),
        workflows=frozenset(WORKFLOWS),
    )
    stack = api_stack(settings)
    try:
        partner = stack.client(PARTNER)
        refused = _refusal(lambda: partner.list_durable_executions_by_function(FunctionName="approval"))
        assert refused["code"] == "AccessDeniedException"
        assert "limited to no tenant (its tenant lists have none in common)" in refused["message"]
        assert f"principal {PARTNER_ACCOUNT} and {PARTNER.arn}" in refused["message"]
        assert _refusal(lambda: _start(partner, "x", "acme"))["code"] == "AccessDeniedException"
    finally:
        stack.front.close()


def test_the_settings_read_the_tenant_principals_and_name_a_bad_value() -> None:
    limits = api_settings(
        {"STEPWELL_API_TENANT_PRINCIPALS": json.dumps(TENANTS)}, ARNS, 30, ""
    ).tenants.scope_of(PARTNER.caller)
    assert limits is not None and limits.tenants == frozenset({"globex"})
    assert api_settings({}, ARNS, 30, "").tenants.scope_of(ACME.caller) is None
    assert api_settings({"STEPWELL_API_TENANT_PRINCIPALS": "{}"}, ARNS, 30, "").tenants == TenantLimits()
    assert TenantLimits.from_json("null").scope_of(Caller(ACME.arn, ACCOUNT, "aws", "acme-app")) is None
    for value, said in (
        ("[]", "not a JSON object"),
        ("{", "not a JSON object"),
        ('{"acme": "arn:aws:iam::123456789012:role/a"}', "not a JSON list"),
        ('{"acme": ["*"]}', "an IAM role ARN"),
        ('{"no#hash": ["123456789012"]}', "no tenant id"),
        (json.dumps({"x" * 257: ["123456789012"]}), "no tenant id"),
    ):
        with pytest.raises(SettingsError) as refused:
            api_settings({"STEPWELL_API_TENANT_PRINCIPALS": value}, ARNS, 30, "")
        assert "STEPWELL_API_TENANT_PRINCIPALS" in str(refused.value)
        assert re.search(re.escape(said), str(refused.value)), value
