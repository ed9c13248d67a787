"""`make chaos`: run a mix of workflows under injected faults and check nothing is lost or done twice.

    .venv/bin/python tools/chaos.py                                  # 1,000 executions, report on stdout
    .venv/bin/python tools/chaos.py --write BENCHMARKS.md            # ... and its section of the file
    .venv/bin/python tools/chaos.py --executions 70 --workers 4      # a short run (tests/chaos)
    .venv/bin/python tools/chaos.py --backend localstack --write BENCHMARKS.md  # ... on LocalStack

The run is the package tools/chaos/ (its __init__ says how it runs and what it checks); this script runs it,
and is what each worker process runs too (with --worker-process).
"""

from __future__ import annotations

import sys

import tool_paths  # tools/, this script's folder, is on the path

tool_paths.add()

from chaos.cli import main  # noqa: E402  (the root and lambda_src are put on the path above)

if __name__ == "__main__":
    sys.exit(main())
