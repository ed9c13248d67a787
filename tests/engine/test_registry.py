"""The registry: durable workflows, plain functions, allowed Lambda functions, and their options."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell import Concurrency, Rate
from stepwell.core.flow_limits import MAX_CONCURRENCY, MAX_RATE, MAX_RATE_PERIOD_SECONDS, resolve_flow
from stepwell.core.invoke_targets import MemoryLambdaInvoker
from stepwell.core.registry import (
    MAX_EXECUTION_TIMEOUT_SECONDS,
    Registry,
    WorkflowOptions,
    is_durable_handler,
)
from stepwell.errors import DuplicateWorkflow, InvalidArgument, InvalidWorkflowName, WorkflowNotFound
from stepwell.model import FlowLimit

PRICING = "arn:aws:lambda:eu-west-1:123456789012:function:pricing"
PRICING_ELSEWHERE = "arn:aws:lambda:us-east-1:210987654321:function:pricing"
TAX = "arn:aws:lambda:eu-west-1:123456789012:function:tax"


@durable_execution
def durable(event: Any, context: DurableContext) -> Any:
    return event


@durable_execution
def other_durable(event: Any, context: DurableContext) -> Any:
    return None


def plain(event: Any, lambda_context: Any) -> Any:
    return event


def with_lambda_targets(*arns: str) -> Registry:
    registry = Registry()
    registry.allow_lambda_targets(arns, MemoryLambdaInvoker({arn: plain for arn in arns}))
    return registry


def test_options_say_how_each_name_runs() -> None:
    registry = with_lambda_targets(PRICING)
    registry.register("orders", durable, execution_timeout=3600)
    registry.register("refunds", other_durable)
    registry.register_function("quote", plain)

    assert registry.options("orders") == WorkflowOptions(execution_timeout=3600, plain=False)
    assert registry.options("refunds") == WorkflowOptions(execution_timeout=None, plain=False)
    assert registry.options("quote") == WorkflowOptions(execution_timeout=None, plain=True)
    assert registry.options("pricing:live") == WorkflowOptions(execution_timeout=None, plain=True)
    # A name this registry does not know (a client without the workflow code) has the defaults.
    assert registry.options("unknown") == WorkflowOptions()
    assert [registry.is_durable(name) for name in ("orders", "quote", "pricing", PRICING, "unknown")] == [
        True,
        False,
        False,
        False,
        False,
    ]
    assert registry.names() == ["orders", "quote", "refunds"]
    assert registry.lambda_targets() == [PRICING]
    assert all(name in registry for name in ("orders", "quote", "pricing", f"{PRICING}:3"))
    assert "tax" not in registry and 7 not in registry


def test_decorators_register_with_options() -> None:
    registry = Registry()

    @registry.workflow("nightly", execution_timeout=MAX_EXECUTION_TIMEOUT_SECONDS)
    @durable_execution
    def nightly(event: Any, context: DurableContext) -> Any:
        return event

    @registry.function("lookup")
    def lookup(event: Any, lambda_context: Any) -> Any:
        return {"found": event}

    assert registry.get("nightly") is nightly
    assert registry.options("nightly").execution_timeout == MAX_EXECUTION_TIMEOUT_SECONDS
    assert registry.options("lookup").plain is True
    assert lookup({"id": 1}, None) == {"found": {"id": 1}}  # the decorator returns the function itself
    assert registry.get("lookup") is not lookup  # the worker runs it through its durable wrapper


@pytest.mark.parametrize("timeout", [0, -5, MAX_EXECUTION_TIMEOUT_SECONDS + 1, 1.5, True, "60"])
def test_a_bad_execution_timeout_is_refused_naming_it(timeout: Any) -> None:
    registry = Registry()
    expected = (
        rf"invalid execution_timeout {timeout!r} for workflow 'orders': whole seconds from 1 to "
        rf"31622400 \(366 days\), or None for no timeout"
    )
    with pytest.raises(InvalidArgument, match=expected):
        registry.register("orders", durable, execution_timeout=timeout)
    with pytest.raises(InvalidArgument, match=expected):
        registry.workflow("orders", execution_timeout=timeout)
    assert "orders" not in registry


def test_the_bounds_of_an_execution_timeout_are_allowed() -> None:
    registry = Registry()
    registry.register("shortest", durable, execution_timeout=1)
    registry.register("longest", other_durable, execution_timeout=MAX_EXECUTION_TIMEOUT_SECONDS)
    assert registry.options("shortest").execution_timeout == 1
    assert registry.options("longest").execution_timeout == MAX_EXECUTION_TIMEOUT_SECONDS


def test_a_name_holds_one_workflow_or_one_function() -> None:
    registry = Registry()
    registry.register("orders", durable)
    registry.register("orders", durable)  # a module imported again
    registry.register_function("quote", plain)
    registry.register_function("quote", plain)

    with pytest.raises(DuplicateWorkflow, match=r"name 'quote' is already registered to function .*plain; "):
        registry.register("quote", durable)
    with pytest.raises(
        DuplicateWorkflow, match=r"name 'orders' is already registered to workflow .*durable; "
    ):
        registry.register_function("orders", plain)
    with pytest.raises(DuplicateWorkflow, match=r"cannot register workflow .*other_durable under it"):
        registry.register("orders", other_durable)
    with pytest.raises(InvalidWorkflowName, match="invalid workflow name 'a b'"):
        registry.register_function("a b", plain)
    with pytest.raises(TypeError, match="function 'quote2': fn must be callable, got int"):
        registry.register_function("quote2", 3)  # type: ignore[arg-type]


def test_a_registered_name_with_a_qualifier_stepwell_honours_runs_under_its_bare_name() -> None:
    registry = with_lambda_targets(PRICING)
    registry.register("orders", durable)
    registry.register_function("quote", plain)

    for name in ("orders", "quote"):
        assert registry.invoke_name(name, "12") == name
        assert registry.invoke_name(f"{name}:$LATEST", "12") == name
        assert registry.invoke_name(f"{name}:$LATEST.PUBLISHED", None) == name
        assert registry.invoke_name(f"{name}:12", "12") == name  # the version the invoke runs on
    # An allowed Lambda function keeps its name and qualifier.
    assert registry.invoke_name("pricing:live", "12") == "pricing:live"
    # Another version or an alias: refused, naming the target and what it accepts.
    with pytest.raises(WorkflowNotFound) as raised:
        registry.invoke_name("orders:11", "12")
    assert str(raised.value) == (
        "invoke target 'orders:11': 'orders' runs on version 12, so the qualifier '11' is not accepted; "
        "use 'orders' or qualify it with $LATEST, $LATEST.PUBLISHED, 12"
    )
    with pytest.raises(WorkflowNotFound, match=r"'orders:1': 'orders' runs on the code this worker has "):
        registry.invoke_name("orders:1", None)
    with pytest.raises(WorkflowNotFound, match=r"the qualifier 'live' is not accepted"):
        registry.invoke_name("quote:live", "12")
    with pytest.raises(WorkflowNotFound, match="no workflow, function or Lambda target 'nope:1'"):
        registry.invoke_name("nope:1", "12")


def test_executed_version_is_the_version_that_runs() -> None:
    registry = with_lambda_targets(PRICING)
    registry.register("orders", durable)
    registry.register_function("quote", plain)

    # What this worker registered runs on its own code version.
    assert registry.executed_version("orders", "12") == "12"
    assert registry.executed_version("quote", "12") == "12"
    assert registry.executed_version("orders", None) == "$LATEST"
    # A Lambda function: its version qualifier, $LATEST unqualified, unknown behind an alias.
    assert registry.executed_version("pricing", "12") == "$LATEST"
    assert registry.executed_version(PRICING, "12") == "$LATEST"
    assert registry.executed_version("pricing:4", "12") == "4"
    assert registry.executed_version(f"{PRICING}:4", None) == "4"
    assert registry.executed_version("pricing:live", "12") is None
    assert registry.executed_version("unknown", "12") is None


def test_lambda_targets_match_by_name_or_arn_with_any_qualifier() -> None:
    registry = with_lambda_targets(PRICING, TAX)

    for target in ("pricing", "pricing:4", "pricing:live", PRICING, f"{PRICING}:4", f"{PRICING}:live"):
        assert target in registry, target
    not_allowed = (
        "arn:aws:lambda:eu-west-1:123456789012:function:shipping",  # another function
        "arn:aws:lambda:us-east-1:123456789012:function:pricing",  # another region
        "arn:aws:lambda:eu-west-1:999999999999:function:pricing",  # another account
        "arn:aws-cn:lambda:eu-west-1:123456789012:function:pricing",  # another partition
        "shipping",
    )
    for target in not_allowed:
        assert target not in registry, target
        with pytest.raises(WorkflowNotFound) as raised:
            registry.get(target)
        assert str(raised.value) == (
            f"no workflow, function or Lambda target {target!r}; registered workflows: none; "
            "registered functions: none; allowed Lambda functions (STEPWELL_INVOKE_FUNCTIONS): "
            f"{PRICING}, {TAX}"
        )


def test_latest_names_the_unqualified_function_and_malformed_targets_are_refused_with_the_rule() -> None:
    registry = with_lambda_targets(PRICING)
    # Lambda's Invoke accepts name:$LATEST (botocore's FunctionName pattern): the unqualified function.
    for target in ("pricing:$LATEST", f"{PRICING}:$LATEST"):
        assert target in registry
        assert registry.executed_version(target, "12") == "$LATEST"
        assert registry.invoke_name(target, "12") == target.removesuffix(":$LATEST")
    with pytest.raises(
        WorkflowNotFound, match=r"invalid invoke target 'pricing:a:b': must be a function name or"
    ):
        registry.get("pricing:a:b")
    assert "pricing:$LATEST.PUBLISHED" not in registry  # Invoke's FunctionName has no $LATEST.PUBLISHED


def test_a_bare_name_matching_two_allowed_functions_must_be_an_arn() -> None:
    registry = with_lambda_targets(PRICING, PRICING_ELSEWHERE)
    with pytest.raises(
        WorkflowNotFound, match=f"names more than one allowed Lambda function .*{PRICING_ELSEWHERE}"
    ):
        registry.get("pricing")
    assert PRICING_ELSEWHERE in registry and f"{PRICING}:2" in registry


def test_a_registered_name_wins_over_a_lambda_function_of_that_name() -> None:
    registry = with_lambda_targets(PRICING)
    registry.register("pricing", durable)
    assert registry.get("pricing") is durable
    assert registry.is_durable("pricing")
    assert registry.get(PRICING) is not durable


@pytest.mark.parametrize(
    "arn",
    [
        "pricing",
        f"{PRICING}:live",
        f"{PRICING}:$LATEST",
        "arn:aws:lambda:eu-west-1:123456789012:function:*",
        "arn:aws:lambda:eu-west-1:1234:function:pricing",
        "arn:aws:s3:::bucket",
    ],
)
def test_only_unqualified_function_arns_may_be_allowed(arn: str) -> None:
    registry = Registry()
    with pytest.raises(InvalidArgument) as raised:
        registry.allow_lambda_targets([arn], MemoryLambdaInvoker({}))
    assert str(raised.value) == (
        f"invalid Lambda function ARN {arn!r}: must be an unqualified Lambda function ARN: "
        "arn:<partition>:lambda:<region>:<account>:function:<name>"
    )
    assert registry.lambda_targets() == []


def test_a_copy_keeps_the_lambda_targets_and_optionally_the_code() -> None:
    registry = with_lambda_targets(PRICING)
    registry.register("orders", durable, execution_timeout=60)
    full = registry.copy()
    settings_only = registry.copy(registrations=False)
    registry.register_function("later", plain)  # the copies do not follow the original

    assert full.names() == ["orders"] and full.options("orders").execution_timeout == 60
    assert settings_only.names() == []
    assert "pricing" in full and "pricing" in settings_only


def test_flow_limits_are_options_of_a_registration() -> None:
    registry = Registry()
    concurrency = Concurrency(3, key="$.customer.id")
    rate = Rate(10, 60)
    registry.register("orders", durable, concurrency=concurrency, rate=rate)

    @registry.workflow("reports", execution_timeout=60, concurrency=Concurrency(1))
    @durable_execution
    def reports(event: Any, context: DurableContext) -> Any:
        return event

    def by_tenant(domain: str, parsed_input: Any) -> tuple[FlowLimit, ...]:
        return (
            FlowLimit(
                kind="concurrency",
                domain=domain,
                workflow="tenants",
                key=str(parsed_input["tenant"]),
                limit=2,
            ),
        )

    registry.register("definitions", other_durable, flow_resolver=by_tenant)

    assert registry.options("orders") == WorkflowOptions(concurrency=concurrency, rate=rate)
    assert registry.options("reports") == WorkflowOptions(execution_timeout=60, concurrency=Concurrency(1))
    assert registry.options("definitions").flow_resolver is by_tenant
    assert [registry.options(n).has_flow_limits for n in ("orders", "reports", "definitions")] == [True] * 3
    registry.register("plain.workflow", durable)
    assert not registry.options("plain.workflow").has_flow_limits
    assert not registry.options("unknown").has_flow_limits  # a client without the code knows no limits


def test_flow_declarations_are_exported_from_the_package() -> None:
    import stepwell

    assert (stepwell.Concurrency, stepwell.Rate) == (Concurrency, Rate)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": 3}, r"invalid concurrency 3 for workflow 'orders': Concurrency\(limit, key=None\)"),
        (
            {"concurrency": Rate(1, 60)},
            r"invalid concurrency Rate\(limit=1, period=60, key=None\) .*Concurrency",
        ),
        (
            {"rate": "10/minute"},
            r"invalid rate '10/minute' for workflow 'orders': Rate\(limit, period_seconds",
        ),
        ({"flow_resolver": "tenant"}, r"invalid flow_resolver 'tenant' for workflow 'orders': a callable"),
        (
            {"flow_resolver": lambda domain, event: (), "concurrency": Concurrency(1)},
            r"workflow 'orders': give either flow_resolver or concurrency/rate, not both",
        ),
    ],
)
def test_a_bad_flow_option_is_refused_naming_it(options: dict[str, Any], message: str) -> None:
    registry = Registry()
    with pytest.raises(InvalidArgument, match=message):
        registry.register("orders", durable, **options)
    with pytest.raises(InvalidArgument, match=message):
        registry.workflow("orders", **options)
    assert "orders" not in registry


@pytest.mark.parametrize(
    ("declare", "message"),
    [
        (lambda: Concurrency(0), r"invalid limit 0 of a concurrency limit: a whole number from 1 to 100"),
        (lambda: Concurrency(MAX_CONCURRENCY + 1), r"invalid limit 101 of a concurrency limit"),
        (lambda: Concurrency(True), r"invalid limit True of a concurrency limit"),
        (lambda: Concurrency(2.5), r"invalid limit 2.5 of a concurrency limit"),  # type: ignore[arg-type]
        (lambda: Rate(0, 60), r"invalid limit 0 of a rate limit: a whole number from 1 to 1000"),
        (lambda: Rate(MAX_RATE + 1, 60), r"invalid limit 1001 of a rate limit"),
        (
            lambda: Rate(1, 0),
            r"invalid period \(seconds\) 0 of a rate limit: a whole number from 1 to 604800",
        ),
        (lambda: Rate(1, MAX_RATE_PERIOD_SECONDS + 1), r"invalid period \(seconds\) 604801 of a rate limit"),
        (
            lambda: Concurrency(1, key="customer"),
            r"invalid key 'customer' of a concurrency limit: a key is '\$'",
        ),
        (lambda: Rate(1, 60, key="$.a..b"), r"invalid key '\$.a..b' of a rate limit"),
        (lambda: Concurrency(1, key=7), r"invalid key 7 of a concurrency limit"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_flow_declaration_is_refused_naming_the_value_and_the_rule(declare: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        declare()


def test_flow_keys_resolve_from_the_input() -> None:
    limits = resolve_flow(
        "acme",
        "orders",
        concurrency=Concurrency(2, key="$.items[1].sku"),
        rate=Rate(5, 60, key=lambda event: event["customer"].upper()),
        source={"items": [{"sku": "a"}, {"sku": "b-2"}], "customer": "c-42"},
    )
    assert limits == (
        FlowLimit(kind="concurrency", domain="acme", workflow="orders", key="b-2", limit=2),
        FlowLimit(kind="rate", domain="acme", workflow="orders", key="C-42", limit=5, period=60),
    )
    assert limits[0].scope.startswith("fc#c#") and limits[1].scope.startswith("fc#r#")
    assert resolve_flow("acme", "orders", concurrency=Concurrency(1), rate=None, source=None) == (
        FlowLimit(kind="concurrency", domain="acme", workflow="orders", key="", limit=1),
    )
    with pytest.raises(
        InvalidArgument, match=r"the rate limit of 'orders' key .*failed: KeyError: 'customer'"
    ):
        resolve_flow(
            "acme", "orders", concurrency=None, rate=Rate(1, 1, key=lambda e: e["customer"]), source={}
        )
    with pytest.raises(InvalidArgument, match=r"key '\$.items\[5\].sku' names nothing in the input"):
        resolve_flow(
            "acme",
            "orders",
            concurrency=Concurrency(1, key="$.items[5].sku"),
            rate=None,
            source={"items": []},
        )
    with pytest.raises(InvalidArgument, match=r"key '\$.n' gave 1.5: a key's value is a string of 1-256"):
        resolve_flow("acme", "orders", concurrency=Concurrency(1, key="$.n"), rate=None, source={"n": 1.5})


def test_an_unknown_setting_is_refused_naming_the_allowed_ones() -> None:
    registry = Registry()
    expected = (
        r"workflow 'orders': unknown settings \['concurency'\]; allowed: concurrency, execution_timeout, "
        r"flow_resolver, on_ended, rate"
    )
    with pytest.raises(TypeError, match=expected):
        registry.register("orders", durable, concurency=Concurrency(1))  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=expected):
        registry.workflow("orders", concurency=Concurrency(1))  # type: ignore[call-arg]
    assert "orders" not in registry


def undecorated(event: Any, context: Any) -> Any:
    return event


def test_a_workflow_without_durable_execution_is_refused_at_registration_naming_the_fix() -> None:
    registry = Registry()
    fix = (
        r"workflow 'orders': .*undecorated is not a @durable_execution handler\. Write:\n"
        r"    @workflow\('orders'\)\n    @durable_execution\n    def undecorated\(event, context\): \.\.\."
    )
    with pytest.raises(TypeError, match=fix):
        registry.register("orders", undecorated)
    with pytest.raises(TypeError, match=fix):
        registry.workflow("orders")(undecorated)
    with pytest.raises(
        TypeError, match=r"(?s)workflow 'quick': .*<lambda> is not .*\n    def handler\(event"
    ):
        registry.register("quick", lambda event, context: event)
    assert registry.names() == []


def test_durable_execution_above_workflow_is_refused_as_it_registers_the_bare_function() -> None:
    registry = Registry()
    with pytest.raises(
        TypeError, match=r"with @durable_execution above @workflow, the bare function is registered"
    ):

        @durable_execution
        @registry.workflow("orders")
        def fulfil(event: Any, context: DurableContext) -> Any:
            return event

    assert "orders" not in registry


def test_a_wrapper_of_a_durable_handler_is_accepted_when_it_says_what_it_wraps() -> None:
    registry = Registry()

    def logged(handler: Any) -> Any:
        @functools.wraps(handler)
        def run(invocation: Any, lambda_context: Any) -> Any:
            return handler(invocation, lambda_context)

        return run

    registry.register("logged", logged(durable))
    registry.register("partial", functools.partial(other_durable))
    assert registry.names() == ["logged", "partial"]
    # Without functools.wraps nothing says a durable handler is inside: refused like a bare function.
    with pytest.raises(TypeError, match="is not a @durable_execution handler"):
        registry.register("opaque", lambda invocation, lambda_context: durable(invocation, lambda_context))
    assert [is_durable_handler(each) for each in (durable, logged(durable), undecorated, plain, 3)] == [
        True,
        True,
        False,
        False,
        False,
    ]


def test_plain_functions_stay_plain_and_a_durable_handler_is_not_one() -> None:
    registry = Registry()
    registry.register_function("quote", plain)  # no decorator asked of a plain function
    registry.function("lookup")(undecorated)
    assert registry.options("quote").plain and registry.options("lookup").plain
    with pytest.raises(
        TypeError,
        match=r"function 'refund': .*durable is a @durable_execution handler; register it as a durable",
    ):
        registry.register_function("refund", durable)
    assert "refund" not in registry
