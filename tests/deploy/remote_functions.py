"""Durable functions of a user's own on the shared deployed stack (issue 41): one JavaScript function
(@aws/durable-execution-sdk-js) and one Python function (aws_durable_execution_sdk_python), each carrying the
handlers of a representative subset of the conformance cases, deployed beside the module in the stack's
root and registered with `durable_functions`, as a user would: `write_stack_files` writes them into the
stack's working copy of examples/complete before the one apply every deployed test shares.

- Each function serves its cases by workflow name: Stepwell hands it the execution's DurableExecutionArn,
  `...:function:<workflow>:$LATEST/durable-execution/...`, and the function's entry (index.mjs,
  stepwell_remote_cases.py) runs that workflow's handler, the case's own file unchanged.
- Each case is registered through an alias of its language's function (one per case, on the function's
  published version): a registration is a function and qualifier of its own, so each gets its own event
  invoke config, as the module requires.
- The workflows are `remote.<language>.<suite>.<id>`; `RemoteCasesApi` starts each case under its
  language's name through the Stepwell client, and the conformance runner drives and judges it
  (tests/conformance/deployed_backend.run_cases).
- The functions checkpoint through the API's AWS_IAM function URL, which neither backend checks as Lambda
  does: as in examples/durable-functions, tests/api/iam_url_front.py stands in front of the deployed API
  function, and the functions run with their execution role's session keys and that front as their
  AWS_ENDPOINT_URL_LAMBDA (`RemoteFunctionsFront`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import sys
import zipfile
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from stepwell.testing.lambda_runtime.node_packages import PackagesNotInstalled, package_files

from tests.api.iam_url_front import IamFunctionUrlFront

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = REPO_ROOT / "tests" / "conformance"
if str(CONFORMANCE) not in sys.path:
    sys.path.insert(0, str(CONFORMANCE))

from deployed_backend import ClientApi  # noqa: E402
from runner import Case, discover_cases  # noqa: E402

JS_HANDLERS_DIR = REPO_ROOT / "tests" / "conformance_js" / "handlers"
NODE_MODULES = REPO_ROOT / "tools" / "node" / "node_modules"
SDK_PACKAGE = "aws_durable_execution_sdk_python"
# The subset: steps, a retry to failure, a wait, a callback, parallel, map, a failing child context and
# wait_for_condition; none logs (ExpectedLogs reads the worker's log) or invokes other workflows.
SUBSET = (
    "step/1-3",
    "step/1-12",
    "wait/2-1",
    "wait_for_callback/7-1",
    "parallel/8-1",
    "map/map-1",
    "child/3-4",
    "wait_for_condition/wfc-1",
)
TF_FILE = "stepwell_remote_cases.tf"
OVERRIDE_FILE = "stepwell_remote_cases_override.tf"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


class Language(Enum):
    """A function's language: its key in the stack's files and workflow names, and what a report says."""

    JAVASCRIPT = "js"
    PYTHON = "py"

    @property
    def label(self) -> str:
        return "javascript" if self is Language.JAVASCRIPT else "python"


def subset_cases() -> list[Case]:
    """The subset's cases, in SUBSET's order (a case missing from the conformance suites is an error)."""
    found = {case.test_id: case for case in discover_cases()}
    missing = [case_id for case_id in SUBSET if case_id not in found]
    if missing:
        raise LookupError(f"the remote functions' subset names cases the suites do not have: {missing}")
    return [found[case_id] for case_id in SUBSET]


def remote_workflow(case: Case, language: Language) -> str:
    """The workflow name a case's handler in `language` is registered under with durable_functions."""
    return f"remote.{language.value}.{case.suite}.{case.case_id}"


def alias_name(case: Case) -> str:
    """The alias of a language's function the case is registered through (letters, digits, '-', '_')."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", f"{case.suite}-{case.case_id}")


def js_handler(case: Case) -> Path:
    return JS_HANDLERS_DIR / case.suite / f"{case.case_id}.mjs"


def _python_module(case: Case) -> str:
    return "case_" + re.sub(r"[^A-Za-z0-9_]", "_", f"{case.suite}_{case.case_id}")


def _write_zip(out: Path, entries: dict[str, bytes]) -> Path:
    """Entries zipped in name order with fixed times: the same inputs give the same zip (and hash)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as archive:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, entries[name])
    return out


_JS_ENTRY = """// The entry of this test function (tests/deploy/remote_functions.py): the handler of the
// workflow named in the execution's ARN (...:function:<workflow>:$LATEST/durable-execution/...),
// each a case's file unchanged.
{imports}

const HANDLERS = {{
{table}
}};

export const handler = async (event, context) => {{
  const arn = event?.DurableExecutionArn ?? "";
  const match = /:function:([A-Za-z0-9_.-]{{1,64}}):/.exec(arn);
  const chosen = match ? HANDLERS[match[1]] : undefined;
  if (!chosen) {{
    const served = Object.keys(HANDLERS).join(", ");
    throw new Error(`no case handler for ${{arn}}; this function serves ${{served}}`);
  }}
  return chosen(event, context);
}};
"""

_PY_ENTRY = '''"""The entry of this test function (tests/deploy/remote_functions.py): the handler of the
workflow named in the execution's ARN (...:function:<workflow>:$LATEST/durable-execution/...), each a
case's file unchanged."""

import importlib
import re

CASES = {cases!r}
_WORKFLOW = re.compile(r":function:([A-Za-z0-9_.-]{{1,64}}):")


def handler(event, context):
    arn = event.get("DurableExecutionArn", "") if isinstance(event, dict) else ""
    match = _WORKFLOW.search(str(arn))
    if match is None or match.group(1) not in CASES:
        raise ValueError(f"no case handler for {{arn!r}}; this function serves {{sorted(CASES)}}")
    return importlib.import_module(f"remote_cases.{{CASES[match.group(1)]}}").handler(event, context)
'''


def build_js_zip(out: Path, cases: list[Case]) -> Path:
    """The JavaScript function's package: the cases' .mjs handlers, the entry, and the SDK's production
    packages from tools/node (PackagesNotInstalled without `make node`)."""
    entries = package_files(NODE_MODULES)
    imports, table = [], []
    for index, case in enumerate(cases):
        path = js_handler(case)
        if not path.is_file():
            raise FileNotFoundError(f"case {case.test_id} has no JavaScript handler: no {path}")
        entries[f"cases/{case.suite}/{case.case_id}.mjs"] = path.read_bytes()
        imports.append(f'import {{ handler as case{index} }} from "./cases/{case.suite}/{case.case_id}.mjs";')
        table.append(f"  {json.dumps(remote_workflow(case, Language.JAVASCRIPT))}: case{index},")
    entries["index.mjs"] = _JS_ENTRY.format(imports="\n".join(imports), table="\n".join(table)).encode()
    return _write_zip(out, entries)


def build_python_zip(out: Path, cases: list[Case]) -> Path:
    """The Python function's package: the cases' handler files as they are, the entry, and the durable
    execution SDK (pure Python, copied from this environment; boto3 comes with Lambda's runtime)."""
    import aws_durable_execution_sdk_python as sdk

    entries: dict[str, bytes] = {"remote_cases/__init__.py": b""}
    modules: dict[str, str] = {}
    for case in cases:
        module = _python_module(case)
        entries[f"remote_cases/{module}.py"] = case.handler_path.read_bytes()
        modules[remote_workflow(case, Language.PYTHON)] = module
    entries["stepwell_remote_cases.py"] = _PY_ENTRY.format(cases=modules).encode()
    sdk_dir = Path(sdk.__file__).resolve().parent
    for path in sorted(sdk_dir.rglob("*.py")):
        entries[f"{SDK_PACKAGE}/{path.relative_to(sdk_dir).as_posix()}"] = path.read_bytes()
    return _write_zip(out, entries)


def _stack_tf(zips: dict[Language, Path], cases: list[Case]) -> str:
    functions = {
        Language.JAVASCRIPT: ("nodejs20.x", "index.handler"),
        Language.PYTHON: ("python3.13", "stepwell_remote_cases.handler"),
    }
    function_lines = "\n".join(
        f'    {language.value} = {{ runtime = "{functions[language][0]}", '
        f'handler = "{functions[language][1]}", zip = {json.dumps(str(path))} }}'
        for language, path in zips.items()
    )
    case_lines = "\n".join(
        f'    {json.dumps(remote_workflow(case, language))} = {{ language = "{language.value}", '
        f'alias = "{alias_name(case)}" }}'
        for language in zips
        for case in cases
    )
    return f"""# Written by tests/deploy/remote_functions.py before the apply: users' own durable functions
# beside the module, one per language, each case registered through an alias of its language's function.

locals {{
  stepwell_remote_functions = {{
{function_lines}
  }}
  stepwell_remote_cases = {{
{case_lines}
  }}
}}

resource "aws_iam_role" "stepwell_remote_cases" {{
  name = "${{var.name}}-remote-cases"
  assume_role_policy = jsonencode({{
    Version   = "2012-10-17"
    Statement = [{{
      Effect    = "Allow"
      Action    = "sts:AssumeRole"
      Principal = {{ Service = "lambda.amazonaws.com" }}
    }}]
  }})
}}

resource "aws_iam_role_policy" "stepwell_remote_cases" {{
  name   = "stepwell-durable-function"
  role   = aws_iam_role.stepwell_remote_cases.id
  policy = module.stepwell.durable_function_policy_json
}}

resource "aws_lambda_function" "stepwell_remote_cases" {{
  for_each = local.stepwell_remote_functions

  function_name    = "${{var.name}}-remote-cases-${{each.key}}"
  role             = aws_iam_role.stepwell_remote_cases.arn
  runtime          = each.value.runtime
  handler          = each.value.handler
  filename         = each.value.zip
  source_code_hash = filebase64sha256(each.value.zip)
  timeout          = 60
  memory_size      = 256
  publish          = true

  environment {{
    variables = {{ AWS_ENDPOINT_URL_LAMBDA = module.stepwell.durable_functions_endpoint }}
  }}
}}

resource "aws_lambda_alias" "stepwell_remote_cases" {{
  for_each = local.stepwell_remote_cases

  name             = each.value.alias
  function_name    = aws_lambda_function.stepwell_remote_cases[each.value.language].function_name
  function_version = aws_lambda_function.stepwell_remote_cases[each.value.language].version
}}

output "stepwell_remote_cases" {{
  description = "The functions by language, their role, the API function and the parameter."
  value = {{
    functions = {{
      for key, function in aws_lambda_function.stepwell_remote_cases : key => function.function_name
    }}
    role_arn     = aws_iam_role.stepwell_remote_cases.arn
    api_function = module.stepwell.api_function_name
    parameter    = module.stepwell.durable_functions_parameter
  }}
}}
"""


_OVERRIDE_TF = """# Written by tests/deploy/remote_functions.py: the one line a user adds, durable_functions,
# given to the example's module (an override file merges it into examples/complete's module block).
module "stepwell" {
  durable_functions = {
    for name, registration in local.stepwell_remote_cases : name => {
      function_arn = aws_lambda_function.stepwell_remote_cases[registration.language].arn
      qualifier    = aws_lambda_alias.stepwell_remote_cases[name].name
    }
  }
}
"""


def write_stack_files(root: Path, build_dir: Path) -> list[Language]:
    """Build the functions' zips into `build_dir` and write their Terraform and the registration into the
    stack's root `root`; returns the languages deployed (JavaScript only with tools/node installed)."""
    cases = subset_cases()
    zips = {Language.PYTHON: build_python_zip(build_dir / "remote-cases-py.zip", cases)}
    # Without tools/node the JavaScript cases skip (and fail with CI=true).
    with contextlib.suppress(PackagesNotInstalled):
        zips[Language.JAVASCRIPT] = build_js_zip(build_dir / "remote-cases-js.zip", cases)
    (root / TF_FILE).write_text(_stack_tf(zips, cases))
    (root / OVERRIDE_FILE).write_text(_OVERRIDE_TF)
    return sorted(zips, key=lambda language: language.value)


# ------------------------------------------------------------------------------ running the cases


class RemoteCasesApi(ClientApi):
    """The cases through the Stepwell client, each started under its language's workflow name: `copies`
    maps each Case object the runner is given (one copy per language) to that language."""

    def __init__(self, client: Any, copies: dict[int, Language]) -> None:
        super().__init__(client)
        self.copies = copies

    def start(self, case: Case, event: Any) -> str:
        return str(self.client.start_execution(remote_workflow(case, self.copies[id(case)]), event))


def language_copies(cases: list[Case], languages: list[Language]) -> tuple[list[Case], dict[int, Language]]:
    """One copy of each case per language (distinct objects, so one batch runs both), and their languages."""
    copies: list[Case] = []
    languages_of: dict[int, Language] = {}
    for language in languages:
        for case in cases:
            copy = dataclasses.replace(case)
            copies.append(copy)
            languages_of[id(copy)] = language
    return copies, languages_of


@dataclass(frozen=True)
class RemoteFunctionsFront:
    """The API front the functions checkpoint at, and the variables their environments get."""

    front: IamFunctionUrlFront
    variables: dict[str, str]


def copy_alias_invoke_config_to_version(lambda_client: Any, function_name: str) -> str:
    """LocalStack only: put the event invoke config the module gave the function's aliases on the version
    they point at too, and return that version. LocalStack looks an asynchronous invocation's config up by
    the version it runs (event_manager.handle_message), never by the alias it was invoked through, so an
    alias's config (its destinations: the results' way back to the work queue) is ignored there, while
    Lambda applies it. Every alias here points at the one published version and has the same config."""
    configs = lambda_client.list_function_event_invoke_configs(FunctionName=function_name)
    aliases = lambda_client.list_aliases(FunctionName=function_name)["Aliases"]
    versions = {alias["FunctionVersion"] for alias in aliases}
    given = configs["FunctionEventInvokeConfigs"]
    if len(versions) != 1 or not given:
        raise AssertionError(
            f"{function_name}: expected aliases on one version with event invoke configs; versions "
            f"{sorted(versions)}, {len(given)} configs"
        )
    version, config = versions.pop(), given[0]
    lambda_client.put_function_event_invoke_config(
        FunctionName=function_name,
        Qualifier=version,
        MaximumRetryAttempts=config["MaximumRetryAttempts"],
        MaximumEventAgeInSeconds=config["MaximumEventAgeInSeconds"],
        DestinationConfig=config["DestinationConfig"],
    )
    return str(version)
