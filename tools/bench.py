"""`make bench`: measure Stepwell and write BENCHMARKS.md.

    .venv/bin/python tools/bench.py --write BENCHMARKS.md          # every section
    .venv/bin/python tools/bench.py --sizes 10,100 --sections aws   # a quick look, nothing written

The bench is the package tools/bench/ (its __init__ says what each section measures); this script runs it.
"""

from __future__ import annotations

import sys

import tool_paths  # tools/, this script's folder, is on the path

tool_paths.add()

from bench.cli import main  # noqa: E402  (the root and lambda_src are put on the path above)

if __name__ == "__main__":
    sys.exit(main())
