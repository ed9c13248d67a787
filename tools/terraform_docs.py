#!/usr/bin/env python3
"""Generate the root module's inputs and outputs tables (Markdown) from its .tf files.

    python tools/terraform_docs.py --write README.md   # replace the text between the markers
    python tools/terraform_docs.py --check README.md   # exit 1 when that text is stale

A small HCL reader, enough for `variable` and `output` blocks: it skips comments, strings (with
${...} interpolation) and heredocs while matching braces, and reads each block's top-level
attributes (`type`, `description`, `default`, `sensitive`) as source text. Standard library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

BEGIN_MARKER = "<!-- BEGIN_TF_DOCS -->"
END_MARKER = "<!-- END_TF_DOCS -->"
DEFAULT_MODULE_DIR = Path(__file__).resolve().parent.parent

BLOCK_START = re.compile(r'^(variable|output)\s+"([^"]+)"\s*\{', re.MULTILINE)
ATTRIBUTE_START = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)\s*=(?!=)")
HEREDOC_START = re.compile(r"<<(-?)([A-Za-z_][A-Za-z0-9_]*)\n")
CLOSERS = {"{": "}", "[": "]", "(": ")"}


class HclError(ValueError):
    """The .tf text is not what this reader understands."""


@dataclass(frozen=True)
class Variable:
    name: str
    type: str
    description: str
    default: str | None

    @property
    def required(self) -> bool:
        return self.default is None


@dataclass(frozen=True)
class Output:
    name: str
    description: str


def _skip_string(text: str, start: int) -> int:
    """Return the index after the string literal opening at text[start] == '"'."""
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == '"':
            return index + 1
        if text.startswith("${", index) or text.startswith("%{", index):
            index = _skip_balanced(text, index + 1, "{")
            continue
        if char == "\n":
            break
        index += 1
    raise HclError(f"unterminated string starting at offset {start}")


def _skip_comment(text: str, index: int) -> int | None:
    """If a comment starts at index, return the index after it; else None."""
    if text.startswith("#", index) or text.startswith("//", index):
        end = text.find("\n", index)
        return len(text) if end < 0 else end
    if text.startswith("/*", index):
        end = text.find("*/", index + 2)
        if end < 0:
            raise HclError(f"unterminated /* comment at offset {index}")
        return end + 2
    return None


def _skip_heredoc(text: str, index: int) -> int | None:
    match = HEREDOC_START.match(text, index)
    if match is None:
        return None
    marker = match.group(2)
    closing = re.compile(rf"^\s*{re.escape(marker)}\s*$", re.MULTILINE)
    end = closing.search(text, match.end())
    if end is None:
        raise HclError(f"unterminated heredoc <<{marker} at offset {index}")
    return end.end()


def _skip_balanced(text: str, index: int, opener: str) -> int:
    """text[index] is opener; return the index after its matching closer."""
    stack = [CLOSERS[opener]]
    index += 1
    while index < len(text):
        char = text[index]
        after_comment = _skip_comment(text, index)
        if after_comment is not None:
            index = after_comment
            continue
        if char == '"':
            index = _skip_string(text, index)
            continue
        after_heredoc = _skip_heredoc(text, index) if char == "<" else None
        if after_heredoc is not None:
            index = after_heredoc
            continue
        if char in CLOSERS:
            stack.append(CLOSERS[char])
        elif char in "}])":
            if char != stack[-1]:
                raise HclError(f"unbalanced {char!r} at offset {index}")
            stack.pop()
            if not stack:
                return index + 1
        index += 1
    raise HclError(f"unclosed {opener!r}")


def _expression_end(body: str, index: int) -> int:
    """Return where the attribute expression starting at index ends (a newline outside brackets)."""
    while index < len(body):
        char = body[index]
        after_comment = _skip_comment(body, index)
        if after_comment is not None:
            return index
        if char == "\n":
            return index
        if char == '"':
            index = _skip_string(body, index)
        elif char in CLOSERS:
            index = _skip_balanced(body, index, char)
        else:
            after_heredoc = _skip_heredoc(body, index) if char == "<" else None
            index = after_heredoc if after_heredoc is not None else index + 1
    return index


def top_level_attributes(body: str) -> dict[str, str]:
    """Attributes written directly in a block body (nested blocks such as validation are skipped)."""
    attributes: dict[str, str] = {}
    index = 0
    while index < len(body):
        char = body[index]
        if char.isspace():
            index += 1
            continue
        after_comment = _skip_comment(body, index)
        if after_comment is not None:
            index = after_comment
            continue
        match = ATTRIBUTE_START.match(body, index)
        if match is not None:
            value_start = match.end()
            value_end = _expression_end(body, value_start)
            attributes[match.group(1)] = body[value_start:value_end].strip()
            index = value_end
            continue
        brace = body.find("{", index)
        newline = body.find("\n", index)
        if brace >= 0 and (newline < 0 or brace < newline):
            index = _skip_balanced(body, brace, "{")  # a nested block
        else:
            index = len(body) if newline < 0 else newline + 1
    return attributes


def string_value(expression: str) -> str:
    """The text of a quoted HCL string expression (escapes decoded); other expressions verbatim."""
    if len(expression) >= 2 and expression.startswith('"') and expression.endswith('"'):
        inner = expression[1:-1]
        return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), inner)
    return expression


def parse_blocks(text: str) -> list[tuple[str, str, dict[str, str]]]:
    blocks: list[tuple[str, str, dict[str, str]]] = []
    index = 0
    while True:
        match = BLOCK_START.search(text, index)
        if match is None:
            return blocks
        brace = match.end() - 1
        end = _skip_balanced(text, brace, "{")
        blocks.append((match.group(1), match.group(2), top_level_attributes(text[brace + 1 : end - 1])))
        index = end


def read_module(module_dir: Path) -> tuple[list[Variable], list[Output]]:
    variables: list[Variable] = []
    outputs: list[Output] = []
    files = sorted(module_dir.glob("*.tf"))
    if not files:
        raise HclError(f"no .tf files in {module_dir}")
    for path in files:
        try:
            blocks = parse_blocks(path.read_text(encoding="utf-8"))
        except HclError as error:
            raise HclError(f"{path}: {error}") from error
        for kind, name, attributes in blocks:
            description = string_value(attributes.get("description", '""'))
            if kind == "variable":
                variables.append(
                    Variable(name, attributes.get("type", "any"), description, attributes.get("default"))
                )
            else:
                outputs.append(Output(name, description))
    return sorted(variables, key=lambda v: v.name), sorted(outputs, key=lambda o: o.name)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>").strip()


def _code(expression: str) -> str:
    compact = " ".join(expression.split()).replace("|", "\\|")
    return f"`{compact}`"


def render(variables: list[Variable], outputs: list[Output]) -> str:
    lines = [
        "### Inputs",
        "",
        "| Name | Description | Type | Default | Required |",
        "|------|-------------|------|---------|:--------:|",
    ]
    for variable in variables:
        default = "n/a" if variable.default is None else _code(variable.default)
        lines.append(
            f"| `{variable.name}` | {_cell(variable.description)} | {_code(variable.type)} | {default} | "
            f"{'yes' if variable.required else 'no'} |"
        )
    lines += ["", "### Outputs", "", "| Name | Description |", "|------|-------------|"]
    lines += [f"| `{output.name}` | {_cell(output.description)} |" for output in outputs]
    return "\n".join(lines) + "\n"


def replace_between_markers(document: str, generated: str, path: Path) -> str:
    begin = document.find(BEGIN_MARKER)
    end = document.find(END_MARKER)
    if begin < 0 or end < 0 or end < begin:
        raise HclError(f"{path} needs the markers {BEGIN_MARKER} and {END_MARKER}, in that order")
    return document[: begin + len(BEGIN_MARKER)] + "\n" + generated + document[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Inputs and outputs tables of the root Terraform module.")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", metavar="FILE", type=Path, help="update FILE between the TF_DOCS markers")
    action.add_argument("--check", metavar="FILE", type=Path, help="exit 1 when FILE's tables are stale")
    parser.add_argument("--module-dir", type=Path, default=DEFAULT_MODULE_DIR, help="the module to document")
    args = parser.parse_args(argv)
    try:
        generated = render(*read_module(args.module_dir))
        target: Path | None = args.write or args.check
        if target is None:
            sys.stdout.write(generated)
            return 0
        current = target.read_text(encoding="utf-8")
        updated = replace_between_markers(current, generated, target)
    except (HclError, OSError) as error:
        print(f"terraform_docs: {error}", file=sys.stderr)
        return 2
    if args.check:
        if updated != current:
            print(f"terraform_docs: {target} is stale; run: python tools/terraform_docs.py --write {target}")
            return 1
        return 0
    if updated != current:
        target.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
