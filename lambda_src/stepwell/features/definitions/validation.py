"""Validation of definition documents: every problem is reported with the node or edge it concerns.

`parse_definition(document, actions=None)` returns a `Definition` or raises `DefinitionInvalid` with the
list of errors. Checks: the document's shape (schema version 1), unknown node types, duplicate ids,
per-type fields (bad durations, bad expressions, unknown actions when the action names are given),
dangling edges, outgoing edges per type (missing or unknown branches), triggers without incoming edges,
unreachable nodes and cycles with no wait in them, parallel/join pairing, the `flowControl` block (limits,
period, key expressions: flow_control.py). `parse_storable_definition`
(the store's check before a put, and `validate_definition`'s) adds what storage would refuse: a definition
too large for its DynamoDB item, NaN or Infinity, and a definition whose expressions may cost more than the
budgets allow (`_cost_errors`: a worst-case estimate per expression, and over the expressions a run
evaluates; stepwell.features.definitions.budgets). `unregistered_actions` lists, as warnings,
action nodes naming an action a process has not registered (the deployed worker may register more).
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Mapping
from typing import Any

from stepwell.features.definitions.actions import HTTP, PUT_EVENT, detail_type_problem
from stepwell.features.definitions.budgets import (
    DEFINITION_COST_LIMIT,
    EXPRESSION_COST_LIMIT,
    MAX_EVENT_BYTES,
    ROOT_BYTES,
)
from stepwell.features.definitions.expressions import (
    Expression,
    ExpressionError,
    brief_repr,
    compile_expression,
    estimate_cost,
)
from stepwell.features.definitions.flow_control import flow_control_into
from stepwell.features.definitions.ids import InvalidId, check_workflow_id
from stepwell.features.definitions.model import (
    CONCURRENCY_POLICIES,
    DEFINITION_ITEM_OVERHEAD,
    DYNAMODB_ITEM_BYTES,
    JOIN_MODES,
    MAX_DEFINITION_BYTES,
    MAX_NODES,
    MAX_WAIT_SECONDS,
    NODE_TYPES,
    SCHEMA_VERSION,
    WAITING_TYPES,
    Definition,
    DefinitionInvalid,
    Edge,
    Node,
    RetryPolicy,
    encode_definition,
    parse_duration,
    parse_instant,
)
from stepwell.features.definitions.outbound import HEADER_RULE, header_problem

# Patterns of whole values: used with fullmatch (match with "$" lets a trailing newline through).
NODE_ID_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
NODE_ID_RULE = "1-64 characters: letters, digits, '_', '.', '-' (not starting with '.' or '-')"
# No '#' (a key separator) and no control character (a newline would split the log lines it is in).
EVENT_NAME_PATTERN = re.compile(r"[^\s#\x00-\x1f\x7f][^#\x00-\x1f\x7f]{0,127}")
_TOP_KEYS = {
    "schemaVersion",
    "id",
    "name",
    "description",
    "policy",
    "flowControl",
    "nodes",
    "edges",
    "metadata",
}
# Branch labels each type's outgoing edges must carry (None: one unlabelled edge).
BRANCHES: dict[str, tuple[str, ...]] = {
    "trigger_or_timeout": ("event", "timeout"),
    "condition": ("true", "false"),
}
_SINGLE_SUCCESSOR = ("trigger", "action", "wait", "join")
_NODE_KEYS: dict[str, set[str]] = {
    "trigger": {"event", "filter"},
    "action": {"action", "input", "output", "retry"},
    "wait": {"duration", "until"},
    "trigger_or_timeout": {"event", "timeout", "output"},
    "condition": {"expression"},
    "parallel": set(),
    "join": {"mode", "n"},
    "end": set(),
}
_COMMON_KEYS = {"id", "type", "label", "description"}


def parse_definition(document: object, actions: Collection[str] | None = None) -> Definition:
    """Validate `document` (a parsed JSON object). `actions`: the registered action names (None: do not
    check action names, e.g. when the user's actions are not importable where the check runs)."""
    errors: list[str] = []
    if not isinstance(document, Mapping):
        raise DefinitionInvalid([f"a definition must be a JSON object, got {type(document).__name__}"])
    doc: dict[str, Any] = dict(document)
    unknown_top = sorted(set(doc) - _TOP_KEYS)
    if unknown_top:
        errors.append(f"unknown top-level keys {unknown_top} (allowed: {sorted(_TOP_KEYS)})")
    version = doc.get("schemaVersion")
    if type(version) is not int or version != SCHEMA_VERSION:  # not true, not 1.0
        errors.append(f"schemaVersion must be {SCHEMA_VERSION}, got {brief_repr(version)}")
    def_id = doc.get("id")
    if def_id is not None:
        try:
            check_workflow_id(def_id)  # what the store would refuse as a key
        except InvalidId as error:
            errors.append(str(error))
    name = doc.get("name")
    if name is not None and not isinstance(name, str):
        errors.append(f"name must be a string, got {brief_repr(name)}")
    concurrency = "single"
    policy = doc.get("policy", {})
    if not isinstance(policy, Mapping):
        errors.append(f"policy must be an object, got {brief_repr(policy)}")
    else:
        concurrency = policy.get("concurrency", "single")
        if concurrency not in CONCURRENCY_POLICIES:
            errors.append(
                f"policy.concurrency {brief_repr(concurrency)} is not one of {list(CONCURRENCY_POLICIES)}"
            )
        extra = sorted(set(policy) - {"concurrency"})
        if extra:
            errors.append(f"unknown policy keys {extra} (allowed: ['concurrency'])")
    flow_concurrency, flow_rate = flow_control_into(doc.get("flowControl"), errors)

    raw_nodes = doc.get("nodes")
    raw_edges = doc.get("edges", [])
    if not isinstance(raw_nodes, list) or not raw_nodes:
        errors.append("nodes must be a non-empty list")
        raise DefinitionInvalid(errors)
    if len(raw_nodes) > MAX_NODES:
        errors.append(f"{len(raw_nodes)} nodes; at most {MAX_NODES} allowed")
    if not isinstance(raw_edges, list):
        errors.append("edges must be a list")
        raw_edges = []

    nodes: dict[str, Node] = {}
    for index, raw in enumerate(raw_nodes):
        node = _parse_node(index, raw, actions, errors)
        if node is None:
            continue
        if node.id in nodes:
            errors.append(f"node {node.id!r}: duplicate node id")
            continue
        nodes[node.id] = node

    edges: list[Edge] = []
    for index, raw in enumerate(raw_edges):
        edge = _parse_edge(index, raw, nodes, errors)
        if edge is not None:
            edges.append(edge)

    outgoing: dict[str, list[Edge]] = {node_id: [] for node_id in nodes}
    incoming: dict[str, list[Edge]] = {node_id: [] for node_id in nodes}
    for edge in edges:
        outgoing[edge.source].append(edge)
        incoming[edge.target].append(edge)

    for node in nodes.values():
        _check_outgoing(node, outgoing[node.id], errors)
        if node.type == "trigger" and incoming[node.id]:
            errors.append(
                f"node {node.id!r} (trigger): a trigger starts a context and cannot have incoming edges "
                f"(from {sorted({e.source for e in incoming[node.id]})})"
            )

    triggers = [node_id for node_id, node in nodes.items() if node.type == "trigger"]
    if nodes and not triggers:
        errors.append("the definition has no trigger node: nothing can start a context")
    reachable = _reachable(triggers, outgoing)
    for node_id in nodes:
        if node_id not in reachable and nodes[node_id].type != "trigger":
            errors.append(f"node {node_id!r}: unreachable from any trigger")

    for cycle in _cycles_without_wait(nodes, outgoing):
        errors.append(f"cycle with no wait in it: {' -> '.join([*cycle, cycle[0]])}")

    joins = _pair_joins(nodes, outgoing, errors)

    if errors:
        raise DefinitionInvalid(errors)
    return Definition(
        raw=doc,
        id=def_id if isinstance(def_id, str) else None,
        name=name if isinstance(name, str) else None,
        concurrency=str(concurrency),
        nodes=nodes,
        edges=edges,
        outgoing=outgoing,
        joins=joins,
        flow_concurrency=flow_concurrency,
        flow_rate=flow_rate,
    )


def unregistered_actions(document: object, actions: Collection[str]) -> list[str]:
    """Warnings for action nodes naming an action not in `actions`, for a check where the registry is not
    known to be complete: the deployed worker imports the workflow modules, which may register more."""
    nodes = document.get("nodes") if isinstance(document, Mapping) else None
    warnings: list[str] = []
    for raw in nodes if isinstance(nodes, list) else []:
        if not isinstance(raw, Mapping) or raw.get("type") != "action":
            continue
        action = raw.get("action")
        if isinstance(action, str) and action and action not in actions:
            warnings.append(
                f"node {brief_repr(raw.get('id'))} (action): action {action!r} is not registered here "
                f"(registered: {', '.join(sorted(actions)) or 'none'}); unless the deployed workflow code "
                "registers it, contexts fail at this node"
            )
    return warnings


def parse_storable_definition(
    document: object, actions: Collection[str] | None = None, now: float | None = None
) -> Definition:
    """parse_definition, and also what storage would refuse: the definition's size as stored, and a wait
    whose constant `until` lies more than 366 days after `now` (default: the wall clock), which would fail
    every context reaching it for a year at least. Only what is stored needs this: a stored definition is
    parsed again on every invocation of its contexts (where such a wait only comes nearer), and the size
    check encodes the whole document."""
    errors = _storage_errors(document) if isinstance(document, Mapping) else []
    try:
        definition = parse_definition(document, actions)
    except DefinitionInvalid as invalid:
        raise DefinitionInvalid(errors + invalid.errors) from None
    errors += _far_constant_untils(definition, time.time() if now is None else now)
    errors += _cost_errors(definition)
    if errors:
        raise DefinitionInvalid(errors)
    return definition


def _far_constant_untils(definition: Definition, now: float) -> list[str]:
    errors = []
    for node in definition.nodes.values():
        until = node.until
        if node.type != "wait" or until is None:
            continue
        at = _constant_instant(until)  # no ValueError: parse_definition refused such an `until`
        if at is not None and at - now > MAX_WAIT_SECONDS:
            errors.append(
                f"node {node.id!r} (wait): 'until' {until.text!r} is more than 366 days ahead; a wait "
                "lasts at most 366 days"
            )
    return errors


_COST_BASIS = (
    f"estimated in bytes read over events of at most {MAX_EVENT_BYTES:,} bytes and data of at most "
    f"{ROOT_BYTES['data']:,}"
)


def _expressions(node: Node) -> list[tuple[str, Expression]]:
    """The node's expressions, with where each is in the node."""
    found: list[tuple[str, Expression]] = []
    for key, expression in (("filter", node.filter), ("expression", node.expression), ("until", node.until)):
        if expression is not None:
            found.append((key, expression))
    found += [(f"input.{key}", value) for key, value in node.inputs.items() if isinstance(value, Expression)]
    return found


def _cost_errors(definition: Definition) -> list[str]:
    """The budgets' check (only before storing: a stored definition's running contexts must keep parsing it
    whatever the limits become; the run's CPU budget bounds them). Each expression's worst-case cost must be
    at most EXPRESSION_COST_LIMIT, and the expressions a run may evaluate (all but the triggers' filters,
    which the router evaluates, one per event) at most DEFINITION_COST_LIMIT together: a run evaluates each
    node at most once between two waits, and a replay evaluates none again."""
    errors: list[str] = []
    costs: list[tuple[int, str]] = []
    for node in definition.nodes.values():
        for key, expression in _expressions(node):
            cost = estimate_cost(expression, ROOT_BYTES)
            where = f"node {node.id!r} ({node.type}): {key!r}"
            if cost > EXPRESSION_COST_LIMIT:
                errors.append(
                    f"{where} may cost {cost:,} per evaluation ({_COST_BASIS}); at most "
                    f"{EXPRESSION_COST_LIMIT:,} allowed per expression (each comparison, 'in' or '+' of "
                    "whole event or data values reads them)"
                )
            if key != "filter":
                costs.append((cost, where))
    total = sum(cost for cost, _ in costs)
    if total > DEFINITION_COST_LIMIT:
        costliest = ", ".join(f"{where} {cost:,}" for cost, where in sorted(costs, reverse=True)[:3])
        errors.append(
            f"the expressions a run may evaluate cost {total:,} together ({_COST_BASIS}); at most "
            f"{DEFINITION_COST_LIMIT:,} allowed per definition (the costliest: {costliest})"
        )
    return errors


def validate_definition(document: object, actions: Collection[str] | None = None) -> list[str]:
    """The list of problems (empty when the definition is valid and storable)."""
    try:
        parse_storable_definition(document, actions)
    except DefinitionInvalid as invalid:
        return invalid.errors
    return []


# --- nodes and edges ------------------------------------------------------------------------------


def _storage_errors(document: Mapping[str, Any]) -> list[str]:
    """The definition must fit in its DynamoDB item, as the store writes it."""
    try:
        size = len(encode_definition(document))
    except (TypeError, ValueError, RecursionError) as error:
        return [f"the definition is not storable as JSON: {error}"]
    if size > MAX_DEFINITION_BYTES:
        return [
            f"the definition is {size:,} bytes as stored (compact JSON); at most {MAX_DEFINITION_BYTES:,} "
            f"fit in its DynamoDB item ({DYNAMODB_ITEM_BYTES:,} bytes, {DEFINITION_ITEM_OVERHEAD:,} of them "
            "kept for its keys and version attributes)"
        ]
    return []


def _expression(node_label: str, key: str, value: object, errors: list[str]) -> Any:
    try:
        return compile_expression(value)
    except ExpressionError as error:
        errors.append(f"{node_label}: bad expression in {key!r}: {error}")
        return None


def _duration(node_label: str, key: str, value: object, errors: list[str]) -> float | None:
    try:
        return parse_duration(value)
    except ValueError as error:
        errors.append(f"{node_label}: {key}: {error}")
        return None


def _parse_node(index: int, raw: object, actions: Collection[str] | None, errors: list[str]) -> Node | None:
    if not isinstance(raw, Mapping):
        errors.append(f"node #{index}: must be an object, got {brief_repr(raw)}")
        return None
    node_id = raw.get("id")
    if not isinstance(node_id, str) or not NODE_ID_PATTERN.fullmatch(node_id):
        errors.append(f"node #{index}: invalid id {brief_repr(node_id)}: {NODE_ID_RULE}")
        return None
    node_type = raw.get("type")
    label = f"node {node_id!r}"
    if node_type not in NODE_TYPES:
        errors.append(f"{label}: unknown type {brief_repr(node_type)} (allowed: {', '.join(NODE_TYPES)})")
        return None
    assert isinstance(node_type, str)
    label = f"node {node_id!r} ({node_type})"
    node = Node(id=node_id, type=node_type, raw=dict(raw))
    unknown = sorted(set(raw) - _COMMON_KEYS - _NODE_KEYS[node_type])
    if unknown:
        allowed = sorted(_COMMON_KEYS | _NODE_KEYS[node_type])
        errors.append(f"{label}: unknown keys {unknown} (allowed: {allowed})")

    if node_type in ("trigger", "trigger_or_timeout"):
        event = raw.get("event")
        if not isinstance(event, str) or not EVENT_NAME_PATTERN.fullmatch(event):
            errors.append(
                f"{label}: 'event' must be an event name (1-128 characters, not starting with a space, "
                f"no '#' and no control characters), got {brief_repr(event)}"
            )
        else:
            node.event = event
        if "filter" in raw:
            node.filter = _expression(label, "filter", raw["filter"], errors)
    if node_type == "trigger_or_timeout":
        if "timeout" not in raw:
            errors.append(f"{label}: missing 'timeout' (a duration)")
        else:
            node.timeout = _duration(label, "timeout", raw["timeout"], errors)
    if node_type in ("action", "trigger_or_timeout") and "output" in raw:
        output = raw["output"]
        if not isinstance(output, str) or not NODE_ID_PATTERN.fullmatch(output):
            errors.append(f"{label}: 'output' must be a data key ({NODE_ID_RULE}), got {brief_repr(output)}")
        else:
            node.output = output
    if node_type == "action":
        action = raw.get("action")
        if not isinstance(action, str) or not action:
            errors.append(f"{label}: 'action' must name a registered action, got {brief_repr(action)}")
        elif actions is not None and action not in actions:
            errors.append(
                f"{label}: unknown action {action!r} (registered: {', '.join(sorted(actions)) or 'none'})"
            )
        else:
            node.action = action
        inputs = raw.get("input", {})
        if not isinstance(inputs, Mapping):
            errors.append(
                f"{label}: 'input' must be an object mapping names to expressions, got {brief_repr(inputs)}"
            )
        else:
            for key, value in inputs.items():
                node.inputs[str(key)] = (
                    _expression(label, f"input.{key}", value, errors) if isinstance(value, str) else value
                )
        if action == HTTP and isinstance(inputs, Mapping):
            _check_literal_headers(label, inputs.get("headers"), errors)
        if action == PUT_EVENT and isinstance(inputs, Mapping):
            _check_constant_detail_type(label, node.inputs.get("detailType"), errors)
        if "retry" in raw:
            retry = _parse_retry(label, raw["retry"], errors)
            if retry is not None:
                node.retry = retry
    if node_type == "wait":
        has_duration, has_until = "duration" in raw, "until" in raw
        if has_duration == has_until:
            errors.append(f"{label}: give exactly one of 'duration' (a duration) or 'until' (an expression)")
        elif has_duration:
            node.duration = _duration(label, "duration", raw["duration"], errors)
        else:
            node.until = _expression(label, "until", raw["until"], errors)
            _check_constant_until(label, node.until, errors)
    if node_type == "condition":
        if "expression" not in raw:
            errors.append(f"{label}: missing 'expression'")
        else:
            node.expression = _expression(label, "expression", raw["expression"], errors)
    if node_type == "join":
        mode = raw.get("mode", "all")
        if mode not in JOIN_MODES:
            errors.append(f"{label}: mode {brief_repr(mode)} is not one of {list(JOIN_MODES)}")
        else:
            node.mode = str(mode)
        n = raw.get("n")
        if mode == "n":
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                errors.append(
                    f"{label}: mode 'n' needs 'n', a whole number of at least 1, got {brief_repr(n)}"
                )
            else:
                node.n = n
        elif n is not None:
            errors.append(f"{label}: 'n' is only allowed with mode 'n'")
    return node


def _check_literal_headers(label: str, headers: object, errors: list[str]) -> None:
    """The headers of a `stepwell.http` node, when written out (an expression is checked at run time)."""
    if not isinstance(headers, Mapping):
        return
    for name, value in headers.items():
        problem = header_problem(str(name), value if isinstance(value, str) else "")
        if problem:
            errors.append(f"{label}: input.headers: {problem}: {HEADER_RULE}")


def _check_constant_detail_type(label: str, detail_type: object, errors: list[str]) -> None:
    """The detailType of a `stepwell.put_event` node, when it reads no data (else checked at run time)."""
    if isinstance(detail_type, Expression) and not detail_type.paths():
        try:
            detail_type = detail_type.evaluate({})
        except ExpressionError:
            return  # fails the same way when the node runs, naming the node
    problem = detail_type_problem(detail_type) if isinstance(detail_type, str) else None
    if problem:
        errors.append(f"{label}: input.detailType: {problem}")


def _check_constant_until(label: str, until: object, errors: list[str]) -> None:
    """A wait's `until` that reads no data is the same time on every run: one that is not a time fails
    here rather than in every context that reaches it. (How far ahead it lies depends on when the node
    runs: checked then, and when the definition is stored, _far_constant_untils.)"""
    try:
        _constant_instant(until)
    except ValueError as error:
        errors.append(f"{label}: 'until' {error}")


def _constant_instant(until: object) -> float | None:
    """The epoch seconds of an `until` that reads no data; None for one that reads data or fails to
    evaluate (it fails the same way when the node runs, naming the node). ValueError naming the value
    when it gives no time."""
    if not isinstance(until, Expression) or until.paths():
        return None
    try:
        value = until.evaluate({})
    except ExpressionError:
        return None
    return parse_instant(value)


def _parse_retry(label: str, raw: object, errors: list[str]) -> RetryPolicy | None:
    if not isinstance(raw, Mapping):
        errors.append(f"{label}: 'retry' must be an object, got {brief_repr(raw)}")
        return None
    allowed = {"maxAttempts", "initialDelay", "maxDelay", "backoffRate", "jitter"}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        errors.append(f"{label}: unknown retry keys {unknown} (allowed: {sorted(allowed)})")
    defaults = RetryPolicy()
    attempts = raw.get("maxAttempts", defaults.max_attempts)
    if not isinstance(attempts, int) or isinstance(attempts, bool) or not 1 <= attempts <= 20:
        errors.append(f"{label}: retry.maxAttempts must be a whole number 1..20, got {brief_repr(attempts)}")
        attempts = defaults.max_attempts
    initial = _duration(label, "retry.initialDelay", raw.get("initialDelay", defaults.initial_delay), errors)
    maximum = _duration(label, "retry.maxDelay", raw.get("maxDelay", defaults.max_delay), errors)
    rate = raw.get("backoffRate", defaults.backoff_rate)
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not 1 <= rate <= 10:
        errors.append(f"{label}: retry.backoffRate must be a number 1..10, got {brief_repr(rate)}")
        rate = defaults.backoff_rate
    jitter = raw.get("jitter", defaults.jitter)
    if jitter not in ("full", "none"):
        errors.append(f"{label}: retry.jitter must be 'full' or 'none', got {brief_repr(jitter)}")
        jitter = defaults.jitter
    return RetryPolicy(
        max_attempts=attempts,
        initial_delay=initial or defaults.initial_delay,
        max_delay=maximum or defaults.max_delay,
        backoff_rate=float(rate),
        jitter=str(jitter),
    )


def _parse_edge(index: int, raw: object, nodes: Mapping[str, Node], errors: list[str]) -> Edge | None:
    if not isinstance(raw, Mapping):
        errors.append(f"edge #{index}: must be an object with 'from' and 'to', got {brief_repr(raw)}")
        return None
    source, target, branch = raw.get("from"), raw.get("to"), raw.get("branch")
    unknown = sorted(set(raw) - {"from", "to", "branch", "label"})
    label = f"edge #{index} ({_plain(source)} -> {_plain(target)})"
    if unknown:
        errors.append(f"{label}: unknown keys {unknown} (allowed: ['branch', 'from', 'label', 'to'])")
    if branch is not None and not isinstance(branch, str):
        errors.append(f"{label}: 'branch' must be a string, got {brief_repr(branch)}")
        return None
    bad = False
    for end, value in (("from", source), ("to", target)):
        if not isinstance(value, str) or value not in nodes:
            errors.append(f"{label}: dangling edge: '{end}' names no node ({brief_repr(value)})")
            bad = True
    if bad:
        return None
    assert isinstance(source, str) and isinstance(target, str)
    return Edge(source, target, branch, index)


def _plain(value: object) -> str:
    return value if isinstance(value, str) and len(value) <= 64 else brief_repr(value)


def _check_outgoing(node: Node, edges: list[Edge], errors: list[str]) -> None:
    label = f"node {node.id!r} ({node.type})"
    if node.type == "end":
        if edges:
            errors.append(f"{label}: an end node has no outgoing edges (found {[e.label() for e in edges]})")
        return
    if node.type in BRANCHES:
        wanted = BRANCHES[node.type]
        seen: dict[str, Edge] = {}
        for edge in edges:
            if edge.branch not in wanted:
                errors.append(
                    f"{edge.label()}: branch {edge.branch!r} is not allowed from {label} "
                    f"(allowed: {', '.join(wanted)})"
                )
            elif edge.branch in seen:
                errors.append(f"{edge.label()}: {label} already has a {edge.branch!r} branch")
            else:
                seen[edge.branch] = edge
        for branch in wanted:
            if branch not in seen:
                errors.append(f"{label}: missing branch {branch!r}")
        return
    for edge in edges:
        if edge.branch is not None:
            errors.append(f"{edge.label()}: {label} takes no branch labels")
    if node.type in _SINGLE_SUCCESSOR and len(edges) != 1:
        if not edges:
            errors.append(f"{label}: missing its outgoing edge (every node but 'end' leads somewhere)")
        else:
            errors.append(f"{label}: has {len(edges)} outgoing edges; exactly one allowed (use parallel)")
    if node.type == "parallel":
        if not edges:
            errors.append(f"{label}: needs at least one outgoing edge (a branch)")
        targets = [edge.target for edge in edges]
        if len(set(targets)) != len(targets):
            errors.append(f"{label}: two branches lead to the same node")


# --- graph checks ---------------------------------------------------------------------------------


def _reachable(starts: list[str], outgoing: Mapping[str, list[Edge]]) -> set[str]:
    seen = set(starts)
    stack = list(starts)
    while stack:
        for edge in outgoing.get(stack.pop(), []):
            if edge.target not in seen:
                seen.add(edge.target)
                stack.append(edge.target)
    return seen


def _cycles_without_wait(nodes: Mapping[str, Node], outgoing: Mapping[str, list[Edge]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative) of the graph without its waiting nodes."""
    graph = {
        node_id: [e.target for e in outgoing[node_id] if nodes[e.target].type not in WAITING_TYPES]
        for node_id, node in nodes.items()
        if node.type not in WAITING_TYPES
    }
    index_of: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index_of:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node_id, child = work.pop()
            if child == 0:
                index_of[node_id] = low[node_id] = counter
                counter += 1
                stack.append(node_id)
                on_stack.add(node_id)
            targets = graph[node_id]
            if child < len(targets):
                work.append((node_id, child + 1))
                target = targets[child]
                if target not in index_of:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node_id] = min(low[node_id], index_of[target])
                continue
            if low[node_id] == index_of[node_id]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node_id:
                        break
                if len(component) > 1 or node_id in graph[node_id]:
                    cycles.append(sorted(component, key=list(graph).index))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node_id])
    return cycles


def _pair_joins(
    nodes: Mapping[str, Node], outgoing: Mapping[str, list[Edge]], errors: list[str]
) -> dict[str, str]:
    """Each parallel node's branches must all reach one join (nested parallels are skipped over)."""
    joins: dict[str, str] = {}
    failed: set[str] = set()

    def join_of(parallel_id: str, trail: tuple[str, ...]) -> str | None:
        if parallel_id in joins:
            return joins[parallel_id]
        if parallel_id in failed or parallel_id in trail:
            return None
        found: set[str] = set()
        problems: list[str] = []
        for edge in outgoing[parallel_id]:
            reached, problem = branch_joins(edge.target, (*trail, parallel_id))
            found |= reached
            if problem:
                problems.append(f"branch to {edge.target!r} {problem}")
        label = f"node {parallel_id!r} (parallel)"
        if problems:
            errors.extend(f"{label}: {problem}" for problem in problems)
        if len(found) != 1:
            if not problems:
                errors.append(
                    f"{label}: its branches must all reach one join node, found {sorted(found) or 'none'}"
                )
            failed.add(parallel_id)
            return None
        join_id = found.pop()
        joins[parallel_id] = join_id
        return join_id

    def branch_joins(start: str, trail: tuple[str, ...]) -> tuple[set[str], str | None]:
        found: set[str] = set()
        seen: set[str] = set()
        stack = [start]
        while stack:
            node_id = stack.pop()
            if node_id in seen:
                continue
            seen.add(node_id)
            node = nodes[node_id]
            if node.type == "join":
                found.add(node_id)
                continue
            if node.type == "end":
                return found, f"reaches end node {node_id!r} before a join"
            if node.type == "parallel":
                inner = join_of(node_id, trail)
                if inner is None:
                    continue
                stack.extend(edge.target for edge in outgoing[inner])
                continue
            stack.extend(edge.target for edge in outgoing[node_id])
        return found, None

    for node_id, node in nodes.items():
        if node.type == "parallel":
            join_of(node_id, ())
    paired: dict[str, list[str]] = {}
    for parallel_id, join_id in joins.items():
        paired.setdefault(join_id, []).append(parallel_id)
    for node_id, node in nodes.items():
        if node.type != "join":
            continue
        owners = paired.get(node_id, [])
        if len(owners) > 1:
            errors.append(
                f"node {node_id!r} (join): joins several parallel nodes {sorted(owners)}; one allowed"
            )
        elif not owners and not failed:
            errors.append(f"node {node_id!r} (join): is not the join of any parallel node")
        if node.mode == "n" and node.n is not None and len(owners) == 1:
            branches = len(outgoing[owners[0]])
            if node.n > branches:
                errors.append(
                    f"node {node_id!r} (join): n={node.n} but parallel {owners[0]!r} has {branches} branches"
                )
    return joins
