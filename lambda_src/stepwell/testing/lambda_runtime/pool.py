"""Warm workers, as Lambda keeps execution environments: idle workers per function version, one reused
while its version's code and configuration are unchanged and replaced after a change, a timeout or a
crash; a version busy with one invocation gets another worker, as Lambda scales out. Each version's zip
is fetched and unpacked once per code hash under the work dir, and checked against the function's
CodeSha256."""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import threading
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path

from stepwell.testing.lambda_runtime.functions import LATEST, CodeFetcher, FunctionSpec
from stepwell.testing.lambda_runtime.worker import WorkerProcess

# The environment a new worker of a version gets, given the folder its code is unpacked in.
WorkerEnvironment = Callable[[FunctionSpec, Path], dict[str, str]]


class WorkerPool:
    """The workers of every function version a runtime has run, idle or busy."""

    def __init__(
        self,
        work_dir: Path,
        code_fetcher: CodeFetcher,
        environment: WorkerEnvironment,
        python_executable: str,
        *,
        node_executable: str | None = None,
    ) -> None:
        self.work_dir = work_dir
        self._code_fetcher = code_fetcher
        self._environment = environment
        self._python_executable = python_executable
        self._node_executable = node_executable
        self._idle: dict[tuple[str, str], list[WorkerProcess]] = {}
        self._busy: set[WorkerProcess] = set()
        # Guards the pools only; never held while a handler runs, so a handler may invoke another
        # version (or its own) through the runtime's Invoke API without waiting on itself.
        self._lock = threading.Lock()

    def log_path(self, function_name: str) -> Path:
        """The log every version of the function writes to."""
        return self.work_dir / "logs" / f"{function_name}.log"

    def checkout(self, spec: FunctionSpec) -> WorkerProcess:
        """An idle warm worker running exactly ``spec``, else a new one."""
        stale: list[WorkerProcess] = []
        found: WorkerProcess | None = None
        with self._lock:
            idle = self._idle.setdefault((spec.name, spec.version), [])
            while idle and found is None:
                candidate = idle.pop()
                if candidate.alive() and candidate.spec == spec:
                    found = candidate
                else:
                    stale.append(candidate)  # the code or configuration changed, or it died
            if found is not None:
                self._busy.add(found)
        for worker in stale:
            worker.kill()
        if found is not None:
            return found
        code_dir = self._code_dir(spec)
        log_path = self.log_path(spec.name)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            environment = self._environment(spec, code_dir)
            worker = WorkerProcess(
                spec,
                code_dir,
                environment,
                log,
                python_executable=self._python_executable,
                node_executable=self._node_executable,
            )
        with self._lock:
            self._busy.add(worker)
        return worker

    def checkin(self, worker: WorkerProcess) -> None:
        """A worker done with its invocation: idle again while it lives."""
        with self._lock:
            self._busy.discard(worker)
            if worker.alive():
                self._idle.setdefault((worker.spec.name, worker.spec.version), []).append(worker)
                return
        worker.kill()

    def close(self) -> None:
        """Kill every worker, idle or busy."""
        with self._lock:
            workers = [*self._busy, *(w for idle in self._idle.values() for w in idle)]
            self._busy.clear()
            self._idle.clear()
        for worker in workers:
            worker.kill()

    def _code_dir(self, spec: FunctionSpec) -> Path:
        digest = hashlib.sha256(spec.code_sha256.encode()).hexdigest()[:16]
        target = self.work_dir / "code" / f"{spec.name}-{digest}"
        if not target.exists():
            archive = self._code_fetcher(
                spec.name if spec.version == LATEST else f"{spec.name}:{spec.version}"
            )
            actual = base64.b64encode(hashlib.sha256(archive).digest()).decode()
            if spec.code_sha256 and actual != spec.code_sha256:
                raise RuntimeError(
                    f"fetched code of {spec.name} version {spec.version} has sha256 {actual}, "
                    f"the function says {spec.code_sha256}"
                )
            staging = target.with_name(target.name + f".{uuid.uuid4().hex}")
            with zipfile.ZipFile(io.BytesIO(archive)) as bundle:
                bundle.extractall(staging)
            try:
                staging.rename(target)
            except OSError:  # another worker of the same code unpacked it first
                if not target.exists():
                    raise
                shutil.rmtree(staging, ignore_errors=True)
        return target
