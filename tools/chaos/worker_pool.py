"""The worker processes of the run, each started from tools/chaos.py; one that dies is replaced."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

# The script a worker process runs (with --worker-process).
ENTRY_SCRIPT = Path(__file__).resolve().parents[1] / "chaos.py"


class Workers:
    """The worker processes; one that dies (killed) is replaced."""

    def __init__(self, workdir: Path, count: int, env: Mapping[str, str]) -> None:
        self.workdir = workdir
        self.env = dict(env)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.exits: Counter[str] = Counter()
        self._spawned = 0
        for _ in range(count):
            self.processes.append(self._spawn())

    def _spawn(self) -> subprocess.Popen[bytes]:
        self._spawned += 1
        out = (self.workdir / f"worker-{self._spawned}.out").open("wb")
        err = (self.workdir / f"worker-{self._spawned}.err").open("wb")
        return subprocess.Popen(
            [sys.executable, str(ENTRY_SCRIPT), "--worker-process", str(self.workdir)],
            stdout=out,
            stderr=err,
            env=self.env,
        )

    def replace_dead(self) -> None:
        for index, process in enumerate(self.processes):
            code = process.poll()
            if code is None:
                continue
            self.exits["killed (SIGKILL)" if code == -signal.SIGKILL else f"exit {code}"] += 1
            self.processes[index] = self._spawn()

    def stop(self) -> None:
        (self.workdir / "stop").touch()
        deadline = time.monotonic() + 30
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            if process.poll() is None:
                process.kill()
                process.wait()
