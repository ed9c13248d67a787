"""Where the tools' scripts import from. A script's own folder (tools/) is on sys.path already; `add` puts
the repository's root and lambda_src (stepwell) before it, and any other folder a script needs."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def add(*folders: Path) -> None:
    """Puts the root, lambda_src and `folders` at the front of sys.path (the last one first)."""
    for folder in (ROOT, ROOT / "lambda_src", *folders):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
