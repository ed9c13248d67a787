"""`make scale`: issue 42's scale model. Runs a mix of workflows on moto in-process with every AWS request
recorded (its DynamoDB partitions and the quota it counts against), projects the per-execution profile of
each kind to the targets, and prints, hottest first, the partitions and quotas and the first limit each
target hits (docs/reference/scale.md says how).

    .venv/bin/python tools/scale.py                          # prints the report
    .venv/bin/python tools/scale.py --write BENCHMARKS.md    # ... and writes its section (make scale)
    .venv/bin/python tools/scale.py --plain 4 --waits 4      # a quick look

The model is the package tools/scale/ (its __init__ says what each module does).
"""

from __future__ import annotations

import sys

import tool_paths  # tools/, this script's folder, is on the path

tool_paths.add()

from scale.cli import main  # noqa: E402  (the root and lambda_src are put on the path above)

if __name__ == "__main__":
    sys.exit(main())
