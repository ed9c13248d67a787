#!/usr/bin/env python3
"""Generate the inputs and outputs (Markdown) of the root module and its submodules from their .tf files.

    python tools/terraform_docs.py --write   # docs/reference/module-inputs.md and modules/*/README.md
    python tools/terraform_docs.py --check   # exit 1 when any of them is stale
    python tools/terraform_docs.py --check modules/state/README.md   # only this one (its directory)
    python tools/terraform_docs.py --module-dir modules/state          # print one module's text

The root module's text goes between the markers of its own reference page (ROOT_REFERENCE), which the
project README links to, so that the README's first screens stay prose; a submodule's goes in its README.

Each input is a short list entry (name, type, default or "required", then its description wrapped), long
types and defaults in a fenced block, so no line is over MAX_LINE characters (a longer one is an error).
A submodule's README must also call it in a ```hcl example outside the markers (source
`...//modules/<name>`) that passes every required input and nothing the submodule does not take.

A small HCL reader, enough for `variable`, `output` and `module` blocks: it skips comments, strings (with
${...} interpolation) and heredocs while matching braces, and reads each block's top-level
attributes (`type`, `description`, `default`, `sensitive`) as source text. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BEGIN_MARKER = "<!-- BEGIN_TF_DOCS -->"
END_MARKER = "<!-- END_TF_DOCS -->"
REPO_ROOT = Path(__file__).resolve().parent.parent
README = "README.md"
# The root module's inputs and outputs: a page of their own, linked from the README.
ROOT_REFERENCE = Path("docs") / "reference" / "module-inputs.md"
MAX_LINE = 120  # the docs' line limit
INLINE_LIMIT = 50  # longer types and defaults get a fenced block of their own
INDENT = "  "  # continuation lines of a list entry
# A word that would start a list, heading or quote if a wrapped line began with it.
BLOCK_STARTER = re.compile(r"^(?:[-+*]|#{1,6}|\d{1,9}[.)])$|^>")
CODE_SPAN = re.compile(r"(`[^`]*`)")
# Outside code spans these would turn into HTML tags (`<id>`) or emphasis (`max_*_bytes`), or escape the next.
MARKDOWN_SPECIAL = re.compile(r"([\\<*])")
META_ARGUMENTS = frozenset({"source", "version", "providers", "count", "for_each", "depends_on"})
HCL_FENCE = re.compile(r"^```hcl[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
MODULE_PATH = re.compile(r"//(modules/[A-Za-z0-9_-]+)(?:[?/]|$)")

BLOCK_START = re.compile(r'^(variable|output|module)\s+"([^"]+)"\s*\{', re.MULTILINE)
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
            elif kind == "output":
                outputs.append(Output(name, description))
    return sorted(variables, key=lambda v: v.name), sorted(outputs, key=lambda o: o.name)


def _markdown(text: str) -> str:
    """The description as Markdown that renders as written: specials escaped outside its code spans."""
    parts = CODE_SPAN.split(text)  # odd indexes are the code spans
    escaped = (part if index % 2 else MARKDOWN_SPECIAL.sub(r"\\\1", part) for index, part in enumerate(parts))
    return "".join(escaped)


def _wrap(text: str, first_prefix: str, prefix: str) -> list[str]:
    """Greedy word wrap at MAX_LINE that keeps the description's own line breaks and never begins a line
    with a word Markdown would read as the start of a list, heading or quote."""
    lines: list[str] = []
    for source_line in text.strip().split("\n"):
        words = source_line.split()
        if not words:
            lines.append("")
            continue
        current: list[str] = []
        for word in words:
            lead = prefix if lines else first_prefix
            candidate = lead + " ".join([*current, word])
            if current and len(candidate) > MAX_LINE:
                carried = [current.pop()] if BLOCK_STARTER.match(word) and len(current) > 1 else []
                lines.append(lead + " ".join(current))
                current = [*carried, word]
            else:
                current.append(word)
        lines.append((first_prefix if not lines else prefix) + " ".join(current))
    return [line.rstrip() for line in lines]


def _inline(expression: str) -> str | None:
    """`expression` as a code span when it is short and on one line; else None (it gets a block)."""
    if "\n" in expression or "`" in expression or len(expression) > INLINE_LIMIT:
        return None
    return f"`{expression}`"


def _fenced(label: str, expression: str) -> list[str]:
    """A labelled ```hcl block of the expression as written in the .tf file (its block indent removed)."""
    first, *rest = expression.split("\n")
    margin = min((len(line) - len(line.lstrip()) for line in rest if line.strip()), default=0)
    code = [first, *(line[margin:] for line in rest)]
    return [
        "",
        f"{INDENT}{label}:",
        "",
        f"{INDENT}```hcl",
        *(INDENT + line if line else "" for line in code),
        f"{INDENT}```",
    ]


def _variable_entry(variable: Variable) -> list[str]:
    type_span = _inline(variable.type)
    default_span = None if variable.default is None else _inline(variable.default)
    facts = [type_span or "type below"]
    if variable.default is None:
        facts.append("required")
    else:
        facts.append(f"default {default_span}" if default_span else "default below")
    lines = [f"- `{variable.name}`: {', '.join(facts)}."]
    if variable.description.strip():
        lines += _wrap(_markdown(variable.description), INDENT, INDENT)
    if type_span is None:
        lines += _fenced("Type", variable.type)
    if variable.default is not None and default_span is None:
        lines += _fenced("Default", variable.default)
    return lines


def _output_entry(output: Output) -> list[str]:
    head = f"- `{output.name}`"
    if not output.description.strip():
        return [head]
    return _wrap(_markdown(output.description), f"{head}: ", INDENT)


def _entries(entries: list[list[str]]) -> list[str]:
    if not entries:
        return ["None."]
    lines: list[str] = []
    for entry in entries:
        lines += [*([""] if lines else []), *entry]
    return lines


def render(variables: list[Variable], outputs: list[Output]) -> str:
    lines = ["### Inputs", "", *_entries([_variable_entry(v) for v in variables])]
    lines += ["", "### Outputs", "", *_entries([_output_entry(o) for o in outputs])]
    too_long = [line for line in lines if len(line) > MAX_LINE]
    if too_long:
        raise HclError(f"a generated line is over {MAX_LINE} characters: {too_long[0]!r}")
    return "\n".join(lines) + "\n"


def _outside_markers(document: str) -> str:
    begin = document.find(BEGIN_MARKER)
    end = document.find(END_MARKER)
    if begin < 0 or end < begin:
        return document
    return document[:begin] + document[end + len(END_MARKER) :]


def _module_calls(document: str) -> Iterator[dict[str, str]]:
    """The attributes of every `module` block in the document's ```hcl blocks outside the markers."""
    for fence in HCL_FENCE.finditer(_outside_markers(document)):
        for kind, _name, attributes in parse_blocks(fence.group(1)):
            if kind == "module":
                yield attributes


def usage_problems(document: str, module_path: str, variables: list[Variable]) -> list[str]:
    """What is wrong with the README's examples calling the submodule at module_path (modules/<name>):
    none at all, a required input left out, an argument the submodule does not take."""
    names = {variable.name for variable in variables}
    required = {variable.name for variable in variables if variable.required}
    calls = []
    for attributes in _module_calls(document):
        found = MODULE_PATH.search(string_value(attributes.get("source", '""')))
        if found is not None and found.group(1) == module_path:
            calls.append(attributes)
    if not calls:
        return [f"no ```hcl example calls the submodule (a module block with source ...//{module_path})"]
    problems: list[str] = []
    for attributes in calls:
        missing = sorted(required - set(attributes))
        unknown = sorted(set(attributes) - names - META_ARGUMENTS)
        if missing:
            problems.append(f"the example leaves out required inputs: {', '.join(missing)}")
        if unknown:
            problems.append(f"the example passes arguments {module_path} does not take: {', '.join(unknown)}")
    return problems


def replace_between_markers(document: str, generated: str, path: Path) -> str:
    begin = document.find(BEGIN_MARKER)
    end = document.find(END_MARKER)
    if begin < 0 or end < 0 or end < begin:
        raise HclError(f"{path} needs the markers {BEGIN_MARKER} and {END_MARKER}, in that order")
    return document[: begin + len(BEGIN_MARKER)] + "\n" + generated + document[end:]


def default_targets(repo_root: Path) -> list[Path]:
    """The root module's reference page and the README of every submodule (a directory of .tf files under
    modules/)."""
    submodules = sorted(d for d in (repo_root / "modules").glob("*") if d.is_dir() and any(d.glob("*.tf")))
    return [repo_root / ROOT_REFERENCE, *(d / README for d in submodules)]


def documented_module(target: Path, repo_root: Path) -> Path:
    """The module a document describes: the root module for its reference page, else the document's
    directory (a submodule's README)."""
    if target.resolve() == (repo_root / ROOT_REFERENCE).resolve():
        return repo_root.resolve()
    return target.resolve().parent


def updated_document(target: Path, repo_root: Path) -> tuple[str, str]:
    """(current text, text with fresh docs) of a document of a module (documented_module)."""
    module_dir = documented_module(target, repo_root)
    variables, outputs = read_module(module_dir)
    if not target.exists():
        raise HclError(f"{target} is missing: write one (what the module does, an example) with the markers")
    current = target.read_text(encoding="utf-8")
    updated = replace_between_markers(current, render(variables, outputs), target)
    if module_dir.parent == (repo_root / "modules").resolve():  # a submodule: its README shows a call
        problems = usage_problems(current, f"modules/{module_dir.name}", variables)
        if problems:
            raise HclError(f"{target}: " + "; ".join(problems))
    return current, updated


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Inputs and outputs of the root module and its submodules.")
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--write", metavar="FILE", type=Path, nargs="*", help="update each FILE between the TF_DOCS markers"
    )
    action.add_argument("--check", metavar="FILE", type=Path, nargs="*", help="exit 1 when any FILE is stale")
    parser.add_argument("--module-dir", type=Path, default=REPO_ROOT, help="the module to print")
    parser.add_argument("--repo-root", type=Path, default=REPO_ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    targets: list[Path] | None = args.write if args.write is not None else args.check
    stale: list[Path] = []
    try:
        if targets is None:
            sys.stdout.write(render(*read_module(args.module_dir)))
            return 0
        for target in targets or default_targets(args.repo_root):
            current, updated = updated_document(target, args.repo_root)
            if updated == current:
                continue
            if args.check is not None:
                stale.append(target)
            else:
                target.write_text(updated, encoding="utf-8")
    except (HclError, OSError) as error:
        print(f"terraform_docs: {error}", file=sys.stderr)
        return 2
    for target in stale:
        shown = os.path.relpath(target)
        print(f"terraform_docs: {shown} is stale; run: python tools/terraform_docs.py --write {shown}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
