"""A small, safe expression language for definitions (conditions, trigger filters, action inputs, wait
times). A tokenizer, a recursive-descent parser to a tree, and an evaluator over plain JSON values:
nothing is ever handed to Python's `eval`.

Grammar (lowest precedence first):

    expr    := or
    or      := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare
    compare := sum (("==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not in") sum)?
    sum     := product (("+" | "-") product)*
    product := unary (("*" | "/" | "%") unary)*
    unary   := "-" unary | primary
    primary := NUMBER | STRING | "true" | "false" | "null" | path | "(" expr ")" | "[" [expr ("," expr)*] "]"
    path    := NAME ("." NAME | "[" (NUMBER | STRING) "]")*

A path starts at one of the roots given to `compile_expression` (for definitions: data, event, subject,
domain). A missing key or index reads as null. Strings are in single or double quotes with backslash
escapes for the quote and the backslash.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_EXPRESSION_LENGTH = 2000
MAX_DEPTH = 64
DEFAULT_ROOTS = ("data", "event", "subject", "domain")


class ExpressionError(ValueError):
    """An expression that does not parse, or fails to evaluate; the message names the expression."""


_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<op>==|!=|<=|>=|<|>|\+|-|\*|/|%|\(|\)|\[|\]|\.|,)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "not", "in", "true", "false", "null"}


@dataclass(frozen=True)
class Token:
    kind: str  # number, string, op, name, keyword, end
    value: str
    position: int


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ExpressionError(
                f"unexpected character {text[position]!r} at position {position} in expression {text!r}"
            )
        kind = match.lastgroup or ""
        value = match.group()
        if kind == "name" and value in _KEYWORDS:
            kind = "keyword"
        if kind != "space":
            tokens.append(Token(kind, value, position))
        position = match.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


# --- the tree -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    value: Any


@dataclass(frozen=True)
class Path:
    root: str
    parts: tuple[str | int, ...]


@dataclass(frozen=True)
class ListExpr:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Unary:
    op: str  # "not" or "-"
    operand: Node


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node


Node = Literal | Path | ListExpr | Unary | Binary


class _Parser:
    def __init__(self, text: str, roots: Sequence[str]) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.index = 0
        self.roots = roots
        self.depth = 0

    def error(self, message: str, token: Token | None = None) -> ExpressionError:
        token = token or self.peek()
        where = "at the end" if token.kind == "end" else f"at position {token.position} ({token.value!r})"
        return ExpressionError(f"{message} {where} in expression {self.text!r}")

    def peek(self) -> Token:
        return self.tokens[self.index]

    def take(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def accept(self, kind: str, value: str) -> bool:
        token = self.peek()
        if token.kind == kind and token.value == value:
            self.index += 1
            return True
        return False

    def expect(self, kind: str, value: str) -> None:
        if not self.accept(kind, value):
            raise self.error(f"expected {value!r}")

    def parse(self) -> Node:
        if not self.text.strip():
            raise ExpressionError("empty expression")
        node = self.parse_or()
        if self.peek().kind != "end":
            raise self.error("unexpected token")
        return node

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"expression nested deeper than {MAX_DEPTH} levels")

    def parse_or(self) -> Node:
        node = self.parse_and()
        while self.accept("keyword", "or"):
            node = Binary("or", node, self.parse_and())
        return node

    def parse_and(self) -> Node:
        node = self.parse_not()
        while self.accept("keyword", "and"):
            node = Binary("and", node, self.parse_not())
        return node

    def parse_not(self) -> Node:
        if self.accept("keyword", "not"):
            self.enter()
            node = Unary("not", self.parse_not())
            self.depth -= 1
            return node
        return self.parse_compare()

    def parse_compare(self) -> Node:
        left = self.parse_sum()
        token = self.peek()
        if token.kind == "op" and token.value in ("==", "!=", "<", "<=", ">", ">="):
            self.take()
            return Binary(token.value, left, self.parse_sum())
        if self.accept("keyword", "in"):
            return Binary("in", left, self.parse_sum())
        if token.kind == "keyword" and token.value == "not":
            following = self.tokens[self.index + 1]
            if following.kind == "keyword" and following.value == "in":
                self.index += 2
                return Binary("not in", left, self.parse_sum())
        return left

    def parse_sum(self) -> Node:
        node = self.parse_product()
        while self.peek().kind == "op" and self.peek().value in ("+", "-"):
            op = self.take().value
            node = Binary(op, node, self.parse_product())
        return node

    def parse_product(self) -> Node:
        node = self.parse_unary()
        while self.peek().kind == "op" and self.peek().value in ("*", "/", "%"):
            op = self.take().value
            node = Binary(op, node, self.parse_unary())
        return node

    def parse_unary(self) -> Node:
        if self.accept("op", "-"):
            self.enter()
            node = Unary("-", self.parse_unary())
            self.depth -= 1
            return node
        return self.parse_primary()

    def parse_primary(self) -> Node:
        token = self.take()
        if token.kind == "number":
            number = float(token.value)
            return Literal(
                int(number) if number.is_integer() and re.fullmatch(r"\d+", token.value) else number
            )
        if token.kind == "string":
            return Literal(_unquote(token.value))
        if token.kind == "keyword" and token.value in ("true", "false", "null"):
            return Literal({"true": True, "false": False, "null": None}[token.value])
        if token.kind == "op" and token.value == "(":
            self.enter()
            node = self.parse_or()
            self.depth -= 1
            self.expect("op", ")")
            return node
        if token.kind == "op" and token.value == "[":
            self.enter()
            items: list[Node] = []
            if not self.accept("op", "]"):
                items.append(self.parse_or())
                while self.accept("op", ","):
                    items.append(self.parse_or())
                self.expect("op", "]")
            self.depth -= 1
            return ListExpr(tuple(items))
        if token.kind == "name":
            if token.value not in self.roots:
                raise self.error(
                    f"unknown name {token.value!r} (allowed roots: {', '.join(self.roots)})", token
                )
            return self.parse_path(token.value)
        raise self.error("expected a value", token)

    def parse_path(self, root: str) -> Path:
        parts: list[str | int] = []
        while True:
            if self.accept("op", "."):
                name = self.take()
                if name.kind not in ("name", "keyword"):
                    raise self.error("expected a key after '.'", name)
                parts.append(name.value)
            elif self.accept("op", "["):
                key = self.take()
                if key.kind == "number" and re.fullmatch(r"\d+", key.value):
                    parts.append(int(key.value))
                elif key.kind == "string":
                    parts.append(_unquote(key.value))
                else:
                    raise self.error("expected an index (a whole number) or a quoted key", key)
                self.expect("op", "]")
            else:
                return Path(root, tuple(parts))


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


@dataclass(frozen=True)
class Expression:
    """A compiled expression: `evaluate(env)` with env mapping each root name to its value."""

    text: str
    tree: Node

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        try:
            return _eval(self.tree, env)
        except ExpressionError as error:
            raise ExpressionError(f"{error} (in expression {self.text!r})") from None

    def paths(self) -> list[Path]:
        found: list[Path] = []
        _collect_paths(self.tree, found)
        return found


def compile_expression(text: object, roots: Iterable[str] = DEFAULT_ROOTS) -> Expression:
    if not isinstance(text, str):
        raise ExpressionError(f"an expression must be a string, got {text!r}")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ExpressionError(
            f"expression is {len(text)} characters long; at most {MAX_EXPRESSION_LENGTH} allowed"
        )
    return Expression(text, _Parser(text, tuple(roots)).parse())


def evaluate(text: str, env: Mapping[str, Any]) -> Any:
    return compile_expression(text, env.keys()).evaluate(env)


def _collect_paths(node: Node, found: list[Path]) -> None:
    if isinstance(node, Path):
        found.append(node)
    elif isinstance(node, ListExpr):
        for item in node.items:
            _collect_paths(item, found)
    elif isinstance(node, Unary):
        _collect_paths(node.operand, found)
    elif isinstance(node, Binary):
        _collect_paths(node.left, found)
        _collect_paths(node.right, found)


def truthy(value: Any) -> bool:
    return bool(value)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _resolve(path: Path, env: Mapping[str, Any]) -> Any:
    value = env.get(path.root)
    for part in path.parts:
        if isinstance(part, int):
            value = value[part] if isinstance(value, list) and -len(value) <= part < len(value) else None
        elif isinstance(value, Mapping):
            value = value.get(part)
        else:
            value = None
    return value


def _eval(node: Node, env: Mapping[str, Any]) -> Any:
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, Path):
        return _resolve(node, env)
    if isinstance(node, ListExpr):
        return [_eval(item, env) for item in node.items]
    if isinstance(node, Unary):
        operand = _eval(node.operand, env)
        if node.op == "not":
            return not truthy(operand)
        if not _is_number(operand):
            raise ExpressionError(f"cannot negate a {_type_name(operand)} ({operand!r})")
        return -operand
    op = node.op
    if op == "and":
        left = _eval(node.left, env)
        return _eval(node.right, env) if truthy(left) else left
    if op == "or":
        left = _eval(node.left, env)
        return left if truthy(left) else _eval(node.right, env)
    left = _eval(node.left, env)
    right = _eval(node.right, env)
    if op == "==":
        return _equal(left, right)
    if op == "!=":
        return not _equal(left, right)
    if op in ("in", "not in"):
        if isinstance(right, str):
            if not isinstance(left, str):
                raise ExpressionError(f"'in' a string needs a string on the left, got {_type_name(left)}")
            found = left in right
        elif isinstance(right, list):
            found = any(_equal(left, item) for item in right)
        elif isinstance(right, dict):
            found = isinstance(left, str) and left in right
        elif right is None:
            found = False
        else:
            raise ExpressionError(
                f"'in' needs a list, string or object on the right, got {_type_name(right)}"
            )
        return found if op == "in" else not found
    if op in ("<", "<=", ">", ">="):
        if not (
            (_is_number(left) and _is_number(right)) or (isinstance(left, str) and isinstance(right, str))
        ):
            raise ExpressionError(
                f"cannot compare {_type_name(left)} {left!r} {op} {_type_name(right)} {right!r}: "
                "both sides must be numbers or both strings"
            )
        return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]
    if op == "+":
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        if isinstance(left, list) and isinstance(right, list):
            return left + right
    if not (_is_number(left) and _is_number(right)):
        raise ExpressionError(
            f"cannot apply {op!r} to {_type_name(left)} {left!r} and {_type_name(right)} {right!r}"
        )
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        raise ExpressionError(f"division by zero in {left!r} {op} 0")
    if op == "/":
        result = left / right
        return int(result) if isinstance(result, float) and result.is_integer() else result
    if op == "%":
        return math.fmod(left, right) if isinstance(left, float) or isinstance(right, float) else left % right
    raise ExpressionError(f"unknown operator {op!r}")


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    return bool(left == right)
