"""tools/terraform_docs.py: the generated inputs and outputs of the root module (on its reference page) and
every submodule (in its README) fit the docs' line limit, `--check` fails on any stale one (and on a submodule
README whose example does not call the submodule as it stands), and the submodules' usage examples are valid
Terraform."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from stepwell.testing.terraform import ensure_cli_config

REPO = Path(__file__).resolve().parents[2]
SUBMODULES = sorted(d.name for d in (REPO / "modules").iterdir() if d.is_dir())


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("terraform_docs", REPO / "tools" / "terraform_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


docs = _load_tool()

LONG_DESCRIPTION = " ".join(f"word{index} <tag> *star*" for index in range(60))
OBJECT_TYPE = """object({
    first_field  = string
    second_field = optional(number, 3)
  })"""

VARIABLES_TF = f'''variable "name" {{
  description = "Prefix of every resource name."
  type        = string
}}

variable "settings" {{
  description = "{LONG_DESCRIPTION}"
  type = {OBJECT_TYPE}
  default = {{}}
}}

variable "retries" {{
  description = "How often to retry."
  type        = number
  default     = 3
}}
'''
OUTPUTS_TF = 'output "queue_url" {\n  description = "URL of the queue."\n  value       = "x"\n}\n'
USAGE = """# modules/widget

## Usage

```hcl
module "widget" {
  source = "git::https://example.com/your-org/stepwell.git//modules/widget?ref=v0.1.0"

  name    = "orders"
  retries = 5
}
```

<!-- BEGIN_TF_DOCS -->
<!-- END_TF_DOCS -->
"""


def _repo_with_submodule(tmp_path: Path, readme: str = USAGE) -> Path:
    """A repository root with a variables-only module (its reference page under docs/) and one submodule
    `modules/widget`."""
    (tmp_path / "variables.tf").write_text('variable "name" {\n  type = string\n}\n')
    (tmp_path / "README.md").write_text("# root\n\nSee docs/reference/module-inputs.md.\n")
    (tmp_path / docs.ROOT_REFERENCE).parent.mkdir(parents=True)
    (tmp_path / docs.ROOT_REFERENCE).write_text("# inputs\n\n<!-- BEGIN_TF_DOCS -->\n<!-- END_TF_DOCS -->\n")
    widget = tmp_path / "modules" / "widget"
    widget.mkdir(parents=True)
    (widget / "variables.tf").write_text(VARIABLES_TF)
    (widget / "outputs.tf").write_text(OUTPUTS_TF)
    (widget / "README.md").write_text(readme)
    return tmp_path


def _run(repo: Path, *args: str) -> int:
    code: int = docs.main([*args, "--repo-root", str(repo)])
    return code


def test_every_generated_line_fits_and_long_types_get_a_block(tmp_path: Path) -> None:
    widget = _repo_with_submodule(tmp_path) / "modules" / "widget"
    text: str = docs.render(*docs.read_module(widget))
    assert max(len(line) for line in text.splitlines()) <= docs.MAX_LINE
    assert "- `name`: `string`, required." in text
    assert "- `retries`: `number`, default `3`." in text
    assert "- `settings`: type below, default `{}`." in text
    assert "  ```hcl\n  object({\n    first_field  = string\n" in text
    assert "- `queue_url`: URL of the queue." in text
    # Tags and emphasis outside code spans are escaped, and no wrapped line starts a list or heading.
    assert "\\<tag> \\*star\\*" in text and "<tag>" not in text.replace("\\<tag>", "")
    continuations = [line for line in text.splitlines() if line.startswith("  ") and "```" not in line]
    assert not any(re.match(r"  ([-+*>#]|\d+[.)])( |$)", line) for line in continuations)


def test_wrapping_keeps_a_list_marker_off_the_start_of_a_line() -> None:
    words = "x" * 112 + " - dash"
    lines: list[str] = docs._wrap(words, "  ", "  ")
    assert all(not line.strip().startswith("- ") for line in lines)
    assert " ".join(line.strip() for line in lines) == words


def test_a_line_that_cannot_be_wrapped_is_an_error(tmp_path: Path) -> None:
    wide_type = "object({\n    " + "a" * 130 + " = string\n  })"
    module = tmp_path / "m"
    module.mkdir()
    (module / "variables.tf").write_text(f'variable "wide" {{\n  type = {wide_type}\n}}\n')
    with pytest.raises(docs.HclError, match="over 120 characters"):
        docs.render(*docs.read_module(module))


def test_check_fails_on_a_stale_submodule_readme_and_write_fixes_it(tmp_path: Path) -> None:
    repo = _repo_with_submodule(tmp_path)
    assert _run(repo, "--check") == 1
    assert _run(repo, "--write") == 0
    assert _run(repo, "--check") == 0
    variables = repo / "modules" / "widget" / "variables.tf"
    variables.write_text(variables.read_text().replace("How often to retry.", "Retries before giving up."))
    assert _run(repo, "--check") == 1
    assert (
        _run(repo, "--check", str(repo / docs.ROOT_REFERENCE)) == 0
    )  # only the root module's page asked for
    assert _run(repo, "--write") == 0
    assert "Retries before giving up." in (repo / "modules" / "widget" / "README.md").read_text()


def test_the_root_modules_page_documents_the_root_module_and_the_readme_links_it(tmp_path: Path) -> None:
    repo = _repo_with_submodule(tmp_path)
    assert _run(repo, "--write", str(repo / docs.ROOT_REFERENCE)) == 0
    page = (repo / docs.ROOT_REFERENCE).read_text()
    assert "- `name`: `string`, required." in page and "retries" not in page  # the root's, not widget's
    assert (repo / "README.md").read_text() == "# root\n\nSee docs/reference/module-inputs.md.\n"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert docs.BEGIN_MARKER not in readme and f"]({docs.ROOT_REFERENCE.as_posix()})" in readme


def test_a_submodule_without_a_readme_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo_with_submodule(tmp_path)
    (repo / "modules" / "widget" / "README.md").unlink()
    assert _run(repo, "--check") == 2
    assert "modules/widget/README.md is missing" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda usage: usage.replace('  name    = "orders"\n', ""), "leaves out required inputs: name"),
        (lambda usage: usage.replace("retries = 5", "retries = 5\n  colour  = 1"), "does not take: colour"),
        (lambda usage: usage.replace("//modules/widget", "//modules/other"), "no ```hcl example calls"),
    ],
    ids=["required-input-left-out", "unknown-argument", "no-example"],
)
def test_check_fails_when_the_usage_example_does_not_fit_the_submodule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Callable[[str], str], problem: str
) -> None:
    repo = _repo_with_submodule(tmp_path, readme=edit(USAGE))
    assert _run(repo, "--write") == 2
    assert problem in capsys.readouterr().err


def test_every_readme_of_this_repository_is_current() -> None:
    targets = [path.relative_to(REPO).as_posix() for path in docs.default_targets(REPO)]
    assert targets == [docs.ROOT_REFERENCE.as_posix(), *(f"modules/{name}/README.md" for name in SUBMODULES)]
    assert docs.main(["--check"]) == 0
    root = (REPO / docs.ROOT_REFERENCE).read_text(encoding="utf-8")
    generated = root[root.index(docs.BEGIN_MARKER) : root.index(docs.END_MARKER)]
    assert max(len(line) for line in generated.splitlines()) <= docs.MAX_LINE
    for name in SUBMODULES:  # their prose too: these READMEs are this tool's
        lines = (REPO / "modules" / name / "README.md").read_text(encoding="utf-8").splitlines()
        assert max(len(line) for line in lines) <= docs.MAX_LINE, name


def test_the_submodules_usage_examples_are_valid_terraform(tmp_path: Path) -> None:
    """The seven examples call each other's outputs (as the root module wires them), so together they are
    one configuration: terraform validate checks their arguments' names, types and references."""
    terraform = shutil.which("terraform")
    assert terraform is not None, "terraform is not on PATH"
    environment = {**os.environ, "TF_IN_AUTOMATION": "1", "TF_CLI_CONFIG_FILE": ensure_cli_config()}
    parts = [(REPO / "versions.tf").read_text(), 'provider "aws" {\n  region = "eu-west-1"\n}\n']
    for name in SUBMODULES:
        readme = (REPO / "modules" / name / "README.md").read_text(encoding="utf-8")
        for block in docs.HCL_FENCE.findall(readme):
            local = os.path.relpath(REPO / "modules" / name, tmp_path)  # relative: ../../tools must resolve
            parts.append(re.sub(r'source = "[^"]*"', f'source = "{local}"', block, count=1))
    (tmp_path / "main.tf").write_text("\n".join(parts))
    (tmp_path / "workflows").mkdir()
    for command in (["init", "-backend=false", "-input=false"], ["validate"]):
        result = subprocess.run(
            [terraform, *command, "-no-color"], cwd=tmp_path, env=environment, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout + result.stderr
