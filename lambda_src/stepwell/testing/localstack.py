"""LocalStack on the host, for tests: start it, wait until it is ready, stop it with its children.

API (everything else here is internal):

    with localstack() as endpoint:          # "http://127.0.0.1:<free port>"
        ...                                  # boto3 / localstack-client / terraform against it

    handle = start_localstack()             # the same, without a with-block
    handle.endpoint; handle.log_path; handle.lambda_log_dir; handle.rss_bytes(); handle.stop()

    set_function_environment(endpoint, "fn", {"VAR": "value"})   # over fn's Lambda environment

    LocalStackUnavailable                    # raised when LocalStack cannot be set up or started;
                                             # the message says why and where the log is

If LOCALSTACK_ENDPOINT is set, that LocalStack is used (after a readiness check) and nothing
is started or stopped. Otherwise `tools/localstack/setup.sh` is run first (fast when already
done), then LocalStack's runtime is started from `.cache/localstack/venv` with:

- the gateway on 127.0.0.1 and a free port, no DNS server, no downloads, SQS queue URLs on
  the gateway (`http://127.0.0.1:<port>/<account>/<name>`, a shape the AWS provider accepts);
- DynamoDB Local in memory;
- LAMBDA_RUNTIME_EXECUTOR=stepwell-local (plugins/localstack): Python functions run in local
  processes under `.cache/localstack/lambda-python` (Python 3.13 with only boto3, like AWS's
  python3.13 runtime), Node.js ones (nodejs18.x/20.x/22.x) on the `node` on PATH with the
  harness's node_bootstrap.mjs (as on moto), with AWS_ENDPOINT_URL pointing at this LocalStack;
  `set_function_environment()` puts variables over a function's environment (as
  LambdaRuntime.function_environment does on moto);
- its own filesystem root under `.cache/localstack/runs/`, removed on stop, and its log at
  `.cache/localstack/logs/localstack-<port>.log`, each Lambda execution environment's output
  in `.cache/localstack/logs/lambda-<port>/` (kept after stop; the newest ten runs are retained).

Stopping sends SIGTERM, waits briefly, then kills LocalStack and every process it started
(DynamoDB Local runs in a session of its own, so a process-group kill would miss it). If the
test process dies first, LocalStack notices its parent is gone and does the same.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ENDPOINT_ENV = "LOCALSTACK_ENDPOINT"
EXECUTOR_NAME = "stepwell-local"
REPO_ROOT = Path(__file__).resolve().parents[3]
SETUP_SCRIPT = REPO_ROOT / "tools" / "localstack" / "setup.sh"
LOCALSTACK_HOME = Path(os.environ.get("STEPWELL_LOCALSTACK_HOME", REPO_ROOT / ".cache" / "localstack"))
DEFAULT_READY_TIMEOUT_SECONDS = 120.0
STOP_GRACE_SECONDS = 2.0
KEPT_LOGS = 10
READY_POLL_SECONDS = 0.2


NODE_BOOTSTRAP = Path(__file__).resolve().parent / "lambda_runtime" / "node_bootstrap.mjs"
# The plugin's executor puts the variables this JSON file holds for a function ({name: {variable: value}})
# over its Lambda environment when an execution environment starts (set_function_environment).
LAMBDA_ENVIRONMENT_FILE_ENV = "STEPWELL_LAMBDA_ENVIRONMENT_FILE"


class LocalStackUnavailable(RuntimeError):
    """LocalStack could not be set up, started or reached."""


@dataclass
class LocalStackProcess:
    """A LocalStack started by this module (process is None when LOCALSTACK_ENDPOINT was used)."""

    endpoint: str
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    filesystem_root: Path | None = None
    lambda_log_dir: Path | None = None
    _stopped: bool = field(default=False, repr=False)

    def rss_bytes(self) -> int:
        """Resident memory of LocalStack and all its descendants (0 when not started here)."""
        if self.process is None:
            return 0
        total = 0
        for pid in [self.process.pid, *descendant_pids(self.process.pid)]:
            try:
                with open(f"/proc/{pid}/statm") as statm:
                    total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except OSError:
                continue
        return total

    def stop(self) -> None:
        """Stop LocalStack and every process it started; idempotent; a no-op for an external one."""
        if self._stopped or self.process is None:
            self._stopped = True
            return
        self._stopped = True
        stop_process_tree(self.process)
        if self.filesystem_root is not None:
            shutil.rmtree(self.filesystem_root, ignore_errors=True)


@contextmanager
def localstack(
    *, ready_timeout: float = DEFAULT_READY_TIMEOUT_SECONDS, extra_env: dict[str, str] | None = None
) -> Iterator[str]:
    """Yield the endpoint URL of a ready LocalStack; stop it afterwards if it was started here."""
    handle = start_localstack(ready_timeout=ready_timeout, extra_env=extra_env)
    try:
        yield handle.endpoint
    finally:
        handle.stop()


def start_localstack(
    *, ready_timeout: float = DEFAULT_READY_TIMEOUT_SECONDS, extra_env: dict[str, str] | None = None
) -> LocalStackProcess:
    """Use LOCALSTACK_ENDPOINT if set, else set up and start LocalStack; return once it is ready.

    extra_env adds or overrides LocalStack settings (for example {"LS_LOG": "debug"}).
    """
    if ready_timeout <= 0:
        raise ValueError(f"ready_timeout must be positive seconds, got {ready_timeout!r}")
    external = os.environ.get(ENDPOINT_ENV, "").strip()
    if external:
        endpoint = external.rstrip("/")
        if not endpoint.startswith(("http://", "https://")):
            raise LocalStackUnavailable(f"{ENDPOINT_ENV}={external!r} is not an http(s) URL")
        wait_until_ready(endpoint, ready_timeout, process=None, log_path=None)
        return LocalStackProcess(endpoint=endpoint)

    run_setup()
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    filesystem_root = LOCALSTACK_HOME / "runs" / f"{port}-{os.getpid()}"
    prepare_filesystem_root(filesystem_root)
    log_dir = LOCALSTACK_HOME / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    prune_logs(log_dir)
    log_path = log_dir / f"localstack-{port}.log"
    lambda_log_dir = log_dir / f"lambda-{port}"
    shutil.rmtree(lambda_log_dir, ignore_errors=True)
    env = localstack_environment(port, filesystem_root)
    env["STEPWELL_LAMBDA_LOG_DIR"] = str(lambda_log_dir)
    env[LAMBDA_ENVIRONMENT_FILE_ENV] = str(lambda_environment_file(endpoint))
    env.update(extra_env or {})
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [str(LOCALSTACK_HOME / "venv" / "bin" / "python"), "-m", "stepwell_localstack.launcher"],
            env=env,
            cwd=filesystem_root,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so a Ctrl-C meant for pytest is handled by stop() instead
        )
    handle = LocalStackProcess(
        endpoint=endpoint,
        log_path=log_path,
        process=process,
        filesystem_root=filesystem_root,
        lambda_log_dir=lambda_log_dir,
    )
    try:
        wait_until_ready(endpoint, ready_timeout, process=process, log_path=log_path)
    except BaseException:
        handle.stop()
        raise
    return handle


def lambda_environment_file(endpoint: str) -> Path:
    """Where the plugin of the LocalStack this module started at ``endpoint`` reads the harness's function
    variables (beside that run's Lambda logs)."""
    port = urlsplit(endpoint).port
    if port is None:
        raise ValueError(f"{endpoint!r} names no port: not a LocalStack this module started")
    return LOCALSTACK_HOME / "logs" / f"lambda-{port}" / "environment.json"


def set_function_environment(endpoint: str, function_name: str, variables: dict[str, str] | None) -> None:
    """Put ``variables`` over ``function_name``'s Lambda environment in the execution environments the
    LocalStack at ``endpoint`` starts from now on (None: none any more), as ``LambdaRuntime``'s
    ``function_environment`` does on moto: for what a deployed function reaches through Lambda's network
    and cannot here (a function URL's host resolves nowhere; a front checking signatures knows only the
    keys it handed out). Only for a LocalStack this module started; a running environment keeps its own."""
    if os.environ.get(ENDPOINT_ENV, "").strip():
        raise LocalStackUnavailable(
            f"{ENDPOINT_ENV} names a LocalStack started elsewhere: its functions' environments are its own"
        )
    path = lambda_environment_file(endpoint)
    path.parent.mkdir(parents=True, exist_ok=True)
    overrides = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    if variables is None:
        overrides.pop(function_name, None)
    else:
        overrides[function_name] = {str(name): str(value) for name, value in variables.items()}
    # Written whole and renamed, so the executor never reads half a file.
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(overrides), encoding="utf-8")
    partial.replace(path)


def run_setup() -> None:
    if not SETUP_SCRIPT.is_file():
        raise LocalStackUnavailable(f"{SETUP_SCRIPT} is missing: this module runs from a Stepwell checkout")
    LOCALSTACK_HOME.mkdir(parents=True, exist_ok=True)
    setup_log = LOCALSTACK_HOME / "setup.log"
    with setup_log.open("wb") as log_file:
        result = subprocess.run(
            ["bash", str(SETUP_SCRIPT)], stdout=log_file, stderr=subprocess.STDOUT, check=False
        )
    if result.returncode != 0:
        raise LocalStackUnavailable(
            f"tools/localstack/setup.sh failed with exit code {result.returncode}:\n{tail(setup_log)}"
        )


def localstack_environment(port: int, filesystem_root: Path) -> dict[str, str]:
    # A clean environment: the host's AWS_* variables or proxies must not leak into LocalStack.
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "TMPDIR") if name in os.environ}
    env.update(
        {
            "OVERRIDE_IN_DOCKER": "0",
            "GATEWAY_LISTEN": f"127.0.0.1:{port}",
            "LOCALSTACK_HOST": f"127.0.0.1:{port}",
            "FILESYSTEM_ROOT": str(filesystem_root),
            # Port 53 may be taken (and needs root); nothing here resolves through LocalStack.
            "DNS_ADDRESS": "0",
            # No internet: skip the certificate download and the analytics events.
            "SKIP_SSL_CERT_DOWNLOAD": "1",
            "DISABLE_EVENTS": "1",
            # Queue URLs on the gateway itself, http://127.0.0.1:<port>/<account>/<name>: the default
            # host-style ones (sqs.<region>.localhost.localstack.cloud) need DNS, and the AWS
            # provider rejects the "path" strategy's /queue/<region>/... URLs as malformed.
            "SQS_ENDPOINT_STRATEGY": "off",
            "DYNAMODB_IN_MEMORY": "1",
            "LAMBDA_RUNTIME_EXECUTOR": EXECUTOR_NAME,
            "STEPWELL_LAMBDA_PYTHON": str(LOCALSTACK_HOME / "lambda-python" / "bin" / "python"),
            # Node.js functions run on the bootstrap the moto stack's runtime runs them on.
            "STEPWELL_NODE_BOOTSTRAP": str(NODE_BOOTSTRAP),
        }
    )
    return env


def prepare_filesystem_root(filesystem_root: Path) -> None:
    """A private root per run; only the installed libraries (DynamoDB Local, Java) are shared."""
    shutil.rmtree(filesystem_root, ignore_errors=True)
    var_lib = filesystem_root / "var" / "lib" / "localstack"
    var_lib.mkdir(parents=True)
    (var_lib / "lib").symlink_to(LOCALSTACK_HOME / "libs", target_is_directory=True)


def wait_until_ready(
    endpoint: str, timeout: float, *, process: subprocess.Popen[bytes] | None, log_path: Path | None
) -> None:
    deadline = time.monotonic() + timeout
    last_error = "no answer yet"
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise LocalStackUnavailable(
                f"LocalStack exited with code {process.returncode} before it was ready; "
                f"log {log_path}:\n{tail(log_path)}"
            )
        try:
            with urllib.request.urlopen(f"{endpoint}/_localstack/init/ready", timeout=2) as response:
                if json.loads(response.read()).get("completed") is True:
                    return
                last_error = "init stage READY not completed"
        except (urllib.error.URLError, OSError, ValueError) as error:
            last_error = repr(error)
        time.sleep(READY_POLL_SECONDS)
    where = f"; log {log_path}:\n{tail(log_path)}" if log_path else ""
    raise LocalStackUnavailable(
        f"LocalStack at {endpoint} not ready after {timeout:.0f} s ({last_error}){where}"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def descendant_pids(root_pid: int) -> list[int]:
    """All live descendants of root_pid, from /proc (standard library only)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                # The command name may hold spaces and parentheses: fields resume after the last ')'.
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    pending = [root_pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def process_start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def stop_process_tree(process: subprocess.Popen[bytes]) -> None:
    # Remember the whole tree first: once LocalStack exits its children are re-parented.
    tree = {pid: process_start_time(pid) for pid in descendant_pids(process.pid)}
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for pid, started in tree.items():
        # Skip a pid that has since been reused by an unrelated process.
        if started is not None and process_start_time(pid) == started:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def prune_logs(log_dir: Path) -> None:
    logs = sorted(log_dir.glob("localstack-*.log"), key=lambda path: path.stat().st_mtime, reverse=True)
    for old_log in logs[KEPT_LOGS - 1 :]:
        old_log.unlink(missing_ok=True)
        port = old_log.stem.removeprefix("localstack-")
        shutil.rmtree(log_dir / f"lambda-{port}", ignore_errors=True)


def tail(path: Path | None, lines: int = 40) -> str:
    if path is None or not path.exists():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
