"""The example's test support: the function's package built by ../build.py, and what Lambda's front end does
for the API's AWS_IAM function URL (tests/api/iam_url_front.py) in front of the deployed API function, with
the team's function given its execution role's credentials and that front as its AWS_ENDPOINT_URL_LAMBDA."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from tests.api.iam_url_front import IamFunctionUrlFront, Identity

EXAMPLE = Path(__file__).resolve().parents[1]


def build_function_zip(out: Path) -> Path:
    """../build.py's build (loaded by path: the example's folder name is no Python package name)."""
    spec = importlib.util.spec_from_file_location("durable_functions_build", EXAMPLE / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built: Path = module.build(out)
    return built


@dataclass(frozen=True)
class DurableFunction:
    """The team's function as deployed: its name, its role's identity, and the API front it checkpoints at."""

    name: str
    identity: Identity
    front: IamFunctionUrlFront
