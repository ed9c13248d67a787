"""What this example's tests need besides Stepwell's pytest plugin, which supplies every fixture they use.

In your own repo this file is not needed:
- the tests `import orders` from ../workflows: there, pytest's setting `pythonpath = ["workflows"]` does it
  (docs/testing-your-workflows.md). Here the repository's pytest configuration is the project's, so the folder
  is put on the path below;
- `deployed_stack` applies your root module (STEPWELL_STACK_MODULE). Here the session's `deployed_stack` is
  examples/complete, shared by tests/deploy, so this example's tests get their own: examples/testing/main.tf
  applied next to it, on the same backend, Lambda runtime and scheduler.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from stepwell.testing.backends import Backend
from stepwell.testing.deployed_fixtures import DeployedStack
from stepwell.testing.terraform import TerraformStack

EXAMPLE = Path(__file__).resolve().parents[1]
REPO = EXAMPLE.parents[1]
if str(EXAMPLE / "workflows") not in sys.path:
    sys.path.insert(0, str(EXAMPLE / "workflows"))


@pytest.fixture(scope="session")
def deployed_stack(
    stepwell_backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DeployedStack]:
    """examples/testing/main.tf applied to the backend, destroyed at the end of the session (and the
    teardown fails when anything it created is left)."""
    stack = TerraformStack(
        stepwell_backend,
        module_dir=EXAMPLE.relative_to(REPO).as_posix(),
        work_root=tmp_path_factory.mktemp(f"shop-orders-{stepwell_backend.name}"),
        source_root=REPO,
    )
    stack.variables["region"] = stepwell_backend.region
    try:
        outputs = stack.apply()
    except Exception:
        with contextlib.suppress(Exception):  # the apply's error is the one to report
            stack.destroy()
        raise
    deployed = DeployedStack(stepwell_backend, stack, outputs)
    try:
        yield deployed
    finally:
        leftovers = deployed.destroy()
        assert not leftovers, f"terraform destroy left these behind on {stepwell_backend.name}: {leftovers}"
        stack.cleanup()


def pytest_configure(config: pytest.Config) -> None:
    # tests/conftest.py registers it too; this keeps `pytest examples/testing` quiet on its own.
    config.addinivalue_line("markers", "moto: runs only on the moto backend (the harness's own runtime)")
