"""The chaos run's command line (and a worker process's, with --worker-process)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path

from reporting import report_checked_run
from stepwell.testing.backends import DEPLOYED_BACKEND_NAMES

from chaos.render import SECTION_NAMES, render
from chaos.run import run
from chaos.settings import Settings
from chaos.worker import worker_process

DESCRIPTION = (
    "`make chaos`: run a mix of workflows under injected faults and check nothing is lost or done twice."
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    defaults = Settings()
    parser.add_argument("--executions", type=int, default=defaults.executions, help="executions to start")
    parser.add_argument("--workers", type=int, default=defaults.workers, help="worker processes")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seed of the fault choices")
    parser.add_argument(
        "--timeout", type=float, default=defaults.timeout, help="seconds to wait for the ends"
    )
    parser.add_argument(
        "--worker-version",
        default=defaults.worker_version,
        help="the published worker version the workers run as (digits), as deployed; '' for unversioned",
    )
    parser.add_argument(
        "--backend",
        choices=DEPLOYED_BACKEND_NAMES,
        default=defaults.backend,
        help="the local AWS holding the module's resources (make chaos runs both)",
    )
    parser.add_argument("--write", type=Path, help="write the report's section into this markdown file")
    parser.add_argument("--workdir", type=Path, help="keep the run's files (ledger, logs) here")
    parser.add_argument("--worker-process", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker_process:
        worker_process(args.worker_process)
        return 0
    if args.executions < 1 or args.workers < 1:
        parser.error(
            f"--executions and --workers must be at least 1, got {args.executions} and {args.workers}"
        )
    if args.worker_version and not args.worker_version.isdigit():
        parser.error(
            f"--worker-version must be a published version number (digits) or '' for unversioned workers, "
            f"got {args.worker_version!r}"
        )
    settings = dataclasses.replace(
        defaults,
        executions=args.executions,
        workers=args.workers,
        seed=args.seed,
        timeout=args.timeout,
        worker_version=args.worker_version,
        backend=args.backend,
    )
    with contextlib.ExitStack() as exits:
        if args.workdir:
            args.workdir.mkdir(parents=True, exist_ok=False)
            workdir = args.workdir
        else:
            workdir = Path(exits.enter_context(tempfile.TemporaryDirectory(prefix="stepwell-chaos-")))
        report = run(settings, workdir)
    name = SECTION_NAMES[settings.backend]
    return report_checked_run(render(report), report.failed_checks, args.write, name)
