"""A chaos run's settings (what the command line and the tests choose), the kinds it starts, its log."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import chaos_workflows

DEFAULT_EXECUTIONS = 1000
DEFAULT_WORKERS = 5
REGION = "us-east-1"
# The kinds the run starts in turn: the code workflows, then a definitions context.
JOURNEY = "journey"
MIX = (*chaos_workflows.WORKFLOWS, JOURNEY)


@dataclass(frozen=True)
class Settings:
    executions: int = DEFAULT_EXECUTIONS
    workers: int = DEFAULT_WORKERS
    fault_rate: float = 0.12  # of HTTP attempts to DynamoDB, SQS and Scheduler
    burst_rate: float = 0.01  # of calls: every attempt fails, the error reaches the engine
    kill_rate: float = 0.08  # of invocations: a timer kills the worker while its batch runs
    # A worker still alive at its kill_by-th invocation is killed in it, so a short run's kills never fall
    # below the 5 % however the dice fall (None: the rate alone decides).
    kill_by: int | None = None
    step_kill_rate: float = 0.02  # of step bodies: the worker dies right after the ledger line
    max_attempts: int = 3  # botocore attempts per call (the deployed default is 8: see the report)
    # botocore's base backoff after a throttling error (1 s in botocore), compressed as the virtual clock
    # compresses waits: otherwise the run's time goes to sleeping out injected throttles.
    throttling_backoff_seconds: float = 0.1
    lease_seconds: float = 3.0
    visibility_timeout: int = 8
    max_extra_delay: int = 3  # seconds of random extra SQS delay per message copy
    start_rate: float = 40.0  # executions started per second
    seed: int = 12
    timeout: float = 2400.0  # seconds after the last start before the run gives up waiting
    # The published worker version the workers run as, as the module deploys them: every execution is
    # pinned to it (its end names it). "": unversioned workers, which never pin.
    worker_version: str = "1"
    backend: str = "moto"  # where the module's resources live: moto's server or LocalStack
    # The kinds started in turn (MIX; tools/throughput.py starts one), and whether every SQS message is
    # sent twice (a fault: off for the throughput run, which injects none).
    kinds: tuple[str, ...] = MIX
    duplicates: bool = True


def log(message: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
