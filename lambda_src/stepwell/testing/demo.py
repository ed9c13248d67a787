"""`make demo`: the order story on the embedded backend.

It starts moto's server on 127.0.0.1, applies `examples/complete` to it with Terraform, and runs the
deployed worker's zip with the harness's local Lambda runtime. Two orders then go through
`orders.fulfil` (examples/complete/workflows/fulfilment.py): a flaky payment step that retries, a
three-day cooling-off wait (the harness's scheduler fast-forwards the one-time EventBridge Scheduler
schedule, and the runtime's clock skips with it), a manager's approval sent with the `stepwell` CLI, and a
parallel fulfilment fan-out. While both orders wait out the cooling-off period, Terraform deploys
release 2 of the workflow (examples/complete/releases/v2/fulfilment.py: a fraud screening step inserted
before the wait). The worker publishes a new Lambda version; the two orders stay pinned to the version
they started on and complete with release 1's code, while a third order, started after the deploy, runs
release 2. At the end it prints each execution's timeline with the CLI.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from stepwell.aws.clients import AwsClients
from stepwell.client import StepwellClient
from stepwell.clock import CLOCK_OFFSET_FILE_ENV
from stepwell.console.timeline import open_callbacks
from stepwell.testing.backends import Backend, start_backend
from stepwell.testing.local_infra import next_one_time_due, runtime_and_firer
from stepwell.testing.scheduler import EngineClock, SchedulerFirer, VirtualClock, publish_clock
from stepwell.testing.terraform import REPO_ROOT, TerraformStack

WORKFLOW = "orders.fulfil"
ORDERS: list[dict[str, Any]] = [
    {
        "order_id": "A-1001",
        "email": "ana@example.com",
        "lines": [{"sku": "kettle", "quantity": 1, "unit_price_cents": 4900}],
    },
    {
        "order_id": "B-2002",
        "email": "bo@example.com",
        "lines": [
            {"sku": "mug", "quantity": 4, "unit_price_cents": 1200},
            {"sku": "tea", "quantity": 2, "unit_price_cents": 850},
        ],
    },
]
LATE_ORDER: dict[str, Any] = {
    "order_id": "C-3003",
    "email": "chen@example.com",
    "lines": [{"sku": "teapot", "quantity": 1, "unit_price_cents": 3900}],
}
RELEASE_2 = REPO_ROOT / "examples" / "complete" / "releases" / "v2" / "fulfilment.py"
APPROVER = {"approved_by": "maria@example.com", "note": "cooling-off passed, stock reserved"}
MAX_ROUNDS = 60


def operator_client(config: Mapping[str, Any], clients: AwsClients, clock: VirtualClock) -> StepwellClient:
    """The demo's client (the module's `client_config` output) on the clock the deployed handlers follow.

    On the wall clock, a start made after the clock skipped ahead would be stamped days before its first
    run and its end, which the handlers stamp: describe and the console would show it ending days after it
    started, and an execution timeout (counted from the start) would have passed at its first run."""
    return StepwellClient.from_client_config(config, clients, clock=EngineClock(clock))


def say(text: str) -> None:
    print(f"\n== {text}", flush=True)


def stepwell_cli(config_path: Path, backend: Backend, *arguments: str, clock_file: Path | None = None) -> str:
    """Run the `stepwell` CLI as an operator would, against the demo's deployment; with ``clock_file`` (the
    virtual clock's, kept by publish_clock) on that clock, as `stepwell local env` sets it up."""
    command = [sys.executable, "-m", "stepwell.cli", "--config", str(config_path)]
    command += ["--endpoint-url", backend.endpoint_url, "--region", backend.region, *arguments]
    print("$ stepwell " + " ".join(arguments), flush=True)
    environment = {**os.environ, **backend.environment()}
    if clock_file is not None:
        environment[CLOCK_OFFSET_FILE_ENV] = str(clock_file)
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"stepwell {' '.join(arguments)} failed: {done.stderr.strip()}")
    return done.stdout


def open_callback_ids(history: list[dict[str, Any]]) -> list[str]:
    """Callbacks that started and have not ended yet."""
    return [callback_id for callback_id, _ in open_callbacks(history)]


def next_schedule_delay(firer: SchedulerFirer) -> timedelta | None:
    """How far the virtual clock must move for the earliest pending one-time schedule to be due."""
    due = next_one_time_due(firer)
    if due is None:
        return None
    return max(due - firer.now(), timedelta(0)) + timedelta(seconds=1)


def deploy_release_2(stack: TerraformStack, config_path: Path, backend: Backend) -> None:
    """`terraform apply` of the next release of the workflow code, as a team would on a weekday."""
    say("Deploying release 2 of orders.fulfil (a fraud screening step before the cooling-off wait)")
    shutil.copyfile(RELEASE_2, stack.working_dir / "workflows" / "fulfilment.py")
    stack.apply()
    print(stepwell_cli(config_path, backend, "versions"))


def run_story(backend: Backend, work_dir: Path, console_screenshot: Path | None = None) -> int:
    say("Applying examples/complete to moto's server with Terraform (about two minutes)")
    stack = TerraformStack(backend, module_dir="examples/complete", work_root=work_dir / "terraform")
    stack.variables["region"] = backend.region
    outputs = stack.apply()
    config = outputs["client_config"]
    config_path = work_dir / "client_config.json"
    config_path.write_text(json.dumps(config, indent=2))
    print(f"deployed {config['worker_function_name']}; client config in {config_path}")

    # A wake-up schedule invokes the worker's alias: moto runs no code, so the local runtime runs it.
    clock = VirtualClock()
    # The CLI's callbacks are stamped on the same clock: it reads the clock from this file.
    clock_file = work_dir / "clock"
    publish_clock(clock, str(clock_file))
    runtime, firer = runtime_and_firer(backend, work_dir / "lambda", clock)
    clients = backend.aws_clients(runtime.lambda_endpoint_url)
    client = operator_client(config, clients, clock)
    try:
        say(f"Starting {len(ORDERS)} orders of {WORKFLOW}")
        executions = {
            order["order_id"]: client.start_execution(
                WORKFLOW, order, execution_name=f"order-{order['order_id']}"
            )
            for order in ORDERS
        }
        for order_id, execution_id in executions.items():
            print(f"{order_id}: {execution_id}")
        approved: set[str] = set()
        release_1 = {order_id: "" for order_id in executions}
        for _ in range(MAX_ROUNDS):
            runtime.drain()
            statuses = {oid: client.describe_execution(eid)["Status"] for oid, eid in executions.items()}
            if all(status != "RUNNING" for status in statuses.values()):
                break
            acted = False
            for order_id, execution_id in executions.items():
                for callback_id in open_callback_ids(client.get_execution_history(execution_id)):
                    if callback_id in approved:
                        continue
                    say(f"{order_id} waits for a manager's approval: sending it with the CLI")
                    stepwell_cli(
                        config_path,
                        backend,
                        "callback",
                        "success",
                        callback_id,
                        "--result",
                        json.dumps(APPROVER),
                        clock_file=clock_file,
                    )
                    approved.add(callback_id)
                    acted = True
            if acted:
                continue
            delay = next_schedule_delay(firer)
            if delay is None:
                continue
            if LATE_ORDER["order_id"] not in executions and delay > timedelta(days=1):
                release_1 = {
                    order_id: client.describe_execution(execution_id)["Version"]
                    for order_id, execution_id in executions.items()
                }
                deploy_release_2(stack, config_path, backend)
                say(f"Starting order {LATE_ORDER['order_id']} after the deploy")
                executions[LATE_ORDER["order_id"]] = client.start_execution(
                    WORKFLOW, LATE_ORDER, execution_name=f"order-{LATE_ORDER['order_id']}"
                )
                continue
            say(f"Nothing to do until the next wake-up: skipping {delay} of virtual time")
            for fired in firer.advance_and_fire(delay):
                print(f"fired schedule {fired.name}")
        say("Results")
        failed = 0
        for order_id, execution_id in executions.items():
            description = client.describe_execution(execution_id)
            version = description.get("Version")
            print(f"{order_id}: {description['Status']} on worker version {version}")
            if description["Status"] == "SUCCEEDED":
                print(json.dumps(json.loads(description["Result"]), indent=2))
            else:
                failed += 1
            if order_id in release_1 and version != release_1[order_id]:
                print(f"{order_id} started on version {release_1[order_id]} but ended on {version}")
                failed += 1
        if LATE_ORDER["order_id"] not in executions:
            print("the deploy of release 2 never happened")
            failed += 1
        say("Timelines")
        for execution_id in executions.values():
            print(stepwell_cli(config_path, backend, "history", execution_id, clock_file=clock_file))
        if console_screenshot is not None:
            # Imported here: the browser and the console are developer extras the story itself needs not.
            from stepwell.testing.console_browser import save_timeline_screenshot

            first_order = executions[ORDERS[0]["order_id"]]
            say(f"Saving the console's timeline of {ORDERS[0]['order_id']} as {console_screenshot}")
            save_timeline_screenshot(client, first_order, console_screenshot)
        return 1 if failed else 0
    finally:
        runtime.close()
        stack.cleanup()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--keep", action="store_true", help="keep the working folder (logs, state)")
    parser.add_argument(
        "--console-screenshot",
        metavar="PNG",
        type=Path,
        help="after the story, save the console's timeline of the first order there (headless Chromium)",
    )
    options = parser.parse_args(argv)
    work_dir = Path(tempfile.mkdtemp(prefix="stepwell-demo-", dir=_cache_dir()))
    try:
        with start_backend("moto", log_dir=str(work_dir)) as backend:
            return run_story(backend, work_dir, options.console_screenshot)
    finally:
        if not options.keep:
            shutil.rmtree(work_dir, ignore_errors=True)


def _cache_dir() -> str:
    path = REPO_ROOT / ".cache" / "demo"
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


if __name__ == "__main__":
    sys.exit(main())
