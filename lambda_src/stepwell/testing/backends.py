"""The one switch between local AWS backends for deployed tests: moto's server or LocalStack.

- ``STEPWELL_BACKEND`` (or pytest's ``--stepwell-backend``) picks the backend for a single run:
  ``moto`` (embedded, the default) or ``localstack``. (``memory``, the in-process engine, is not a
  deployed backend: the deployed fixtures treat it like the default.)
- ``STEPWELL_DEPLOYED_BACKENDS`` (space or comma separated, default ``"moto"``) lists the backends the
  deployed tests run on; each test runs once per listed backend. A project sets its own default with
  pytest's ``stepwell_deployed_backends`` ini option (this repository's is ``"moto localstack"``).
- ``LOCALSTACK_ENDPOINT`` set means: use that LocalStack, start nothing.
- ``CI=true``: a backend that cannot start fails the tests instead of skipping them.

On moto, no Lambda code runs and no schedule fires: the harness runs handlers itself
(``stepwell.testing.lambda_runtime``: each published version its own code, mappings on an alias, and
Lambda's Invoke API for the handlers). On LocalStack, LocalStack's own event source mappings, versions
and Invoke API drive the handlers through Stepwell's runtime-executor plugin. Schedules fire through
``stepwell.testing.scheduler`` on both. Virtual time reaches the handlers on both: on moto with each
invocation, on a LocalStack started here through ``Backend.clock_file`` (``STEPWELL_CLOCK_OFFSET_FILE``
in LocalStack's environment, forwarded by the plugin to its runtime workers).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

from stepwell.aws.clients import AwsClients
from stepwell.testing.moto_server import DEFAULT_ACCOUNT_ID, MotoServer, moto_server

BACKEND_ENV = "STEPWELL_BACKEND"
DEPLOYED_BACKENDS_ENV = "STEPWELL_DEPLOYED_BACKENDS"
DEPLOYED_BACKEND_NAMES = ("moto", "localstack")
ALL_BACKEND_NAMES = ("memory", *DEPLOYED_BACKEND_NAMES)
# LocalStack only when asked for: it needs this repository's setup (or LOCALSTACK_ENDPOINT) to run.
DEFAULT_DEPLOYED_BACKENDS = "moto"
DEFAULT_REGION = "us-east-1"
LOCALSTACK_ACCOUNT_ID = "000000000000"
DUMMY_ACCESS_KEY = "test"
DUMMY_SECRET_KEY = "test"
# The LocalStack plugin's runtime workers read their virtual clock from the file this names.
CLOCK_FILE_ENV = "STEPWELL_CLOCK_OFFSET_FILE"

# Local backends answer fast or not at all: fail quickly rather than retrying for minutes.
_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=10, read_timeout=120)


class BackendUnavailable(RuntimeError):
    """A backend could not start here (a missing tool or package); tests skip, or fail when CI=true."""


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def validate_backend_name(name: str, allowed: tuple[str, ...] = DEPLOYED_BACKEND_NAMES) -> str:
    cleaned = name.strip().lower()
    if cleaned not in allowed:
        raise ValueError(f"unknown Stepwell backend {name!r}: allowed values are {', '.join(allowed)}")
    return cleaned


def selected_backend_name(option_value: str | None = None) -> str:
    """The backend for a single run: the pytest option, else STEPWELL_BACKEND, else moto."""
    raw = option_value or os.environ.get(BACKEND_ENV, "") or "moto"
    name = validate_backend_name(raw, ALL_BACKEND_NAMES)
    return "moto" if name == "memory" else name


def deployed_backend_names(raw: str | None = None) -> list[str]:
    """Backends the deployed tests run on, from STEPWELL_DEPLOYED_BACKENDS (or ``raw``), in order."""
    text = raw if raw is not None else os.environ.get(DEPLOYED_BACKENDS_ENV, DEFAULT_DEPLOYED_BACKENDS)
    names: list[str] = []
    for item in re.split(r"[\s,]+", text.strip()):
        if not item:
            continue
        name = validate_backend_name(item)
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError(
            f"{DEPLOYED_BACKENDS_ENV}={text!r} names no backend: "
            f"list one or more of {', '.join(DEPLOYED_BACKEND_NAMES)}"
        )
    return names


@dataclass
class Backend:
    """A running local AWS: where it is, how to reach it, and what the harness must supply."""

    name: str
    endpoint_url: str
    region: str = DEFAULT_REGION
    account_id: str = DEFAULT_ACCOUNT_ID
    access_key_id: str = DUMMY_ACCESS_KEY
    secret_access_key: str = DUMMY_SECRET_KEY
    moto: MotoServer | None = field(default=None, repr=False)
    # LocalStack: the file its runtime workers read their clock from (a VirtualClock listener keeps it).
    clock_file: str | None = None
    _clients: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    _client_lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )
    _session: boto3.Session | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def runs_lambda_code(self) -> bool:
        """True when the backend's own event source mappings run handlers (LocalStack with the plugin);
        False when the harness must (moto)."""
        return self.name == "localstack"

    @property
    def credentials(self) -> dict[str, str]:
        return {"aws_access_key_id": self.access_key_id, "aws_secret_access_key": self.secret_access_key}

    def aws_clients(self, lambda_endpoint_url: str | None = None) -> AwsClients:
        """Stepwell's clients (a StepwellClient's) on this backend. `lambda_endpoint_url`: where Lambda
        requests go instead, the local runtime's endpoint when the backend runs no Lambda code (moto), so
        that a client's wake-ups (asynchronous invokes of the worker's alias) run."""
        session = boto3.Session(
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            region_name=self.region,
        )
        return AwsClients(
            region=self.region,
            endpoint_url=self.endpoint_url,
            session=session,
            service_endpoints={"lambda": lambda_endpoint_url} if lambda_endpoint_url else None,
        )

    def client(self, service_name: str) -> Any:
        """A boto3 client for this backend (LocalStack's through the ``localstack-client`` package).
        Clients are cached per service (boto3 clients are thread-safe; creating one costs tens of ms)."""
        with self._client_lock:
            cached = self._clients.get(service_name)
            if cached is None:
                cached = self._new_client(service_name)
                self._clients[service_name] = cached
            return cached

    def _new_client(self, service_name: str) -> Any:
        if self.name == "localstack":
            try:
                from localstack_client.session import Session
            except ImportError as error:
                raise BackendUnavailable(
                    "the LocalStack backend needs localstack-client: pip install localstack-client"
                ) from error

            session = Session(
                aws_access_key_id=self.access_key_id,
                aws_secret_access_key=self.secret_access_key,
                region_name=self.region,
                localstack_host=self.endpoint_url.split("://", 1)[-1].rstrip("/"),
            )
            client = session.client(service_name, config=_CLIENT_CONFIG)
            # localstack-client prefers AWS_ENDPOINT_URL from the environment over the host it is given.
            if client.meta.endpoint_url.rstrip("/") == self.endpoint_url:
                return client
        if self._session is None:
            self._session = boto3.Session(
                aws_access_key_id=self.access_key_id,
                aws_secret_access_key=self.secret_access_key,
                region_name=self.region,
            )
        return self._session.client(
            service_name,  # type: ignore[call-overload]
            endpoint_url=self.endpoint_url,
            config=_CLIENT_CONFIG,
        )

    def environment(self) -> dict[str, str]:
        """Environment variables that point boto3 (and Stepwell's engine) in a child process here."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }

    def lambda_code(self, function_name: str) -> bytes:
        """The deployed zip of a function, ``name`` or one version's, ``name:version`` (moto keeps it;
        LocalStack serves GetFunction's location)."""
        if self.moto is not None:
            return self.moto.lambda_code(self.region, function_name, self.account_id)
        import urllib.request

        location: str = self.client("lambda").get_function(FunctionName=function_name)["Code"]["Location"]
        with urllib.request.urlopen(location, timeout=60) as response:
            body: bytes = response.read()
        return body


@contextmanager
def _localstack_backend(region: str) -> Iterator[Backend]:
    # stepwell.testing.localstack uses LOCALSTACK_ENDPOINT when set, else starts LocalStack on the host.
    from stepwell.testing.localstack import LocalStackUnavailable, start_localstack

    clock_dir = tempfile.mkdtemp(prefix="stepwell-clock-")
    clock_file = os.path.join(clock_dir, "clock")
    try:
        # The plugin forwards this variable to its runtime workers (an external LocalStack ignores it).
        handle = start_localstack(extra_env={CLOCK_FILE_ENV: clock_file})
    except LocalStackUnavailable as error:
        shutil.rmtree(clock_dir, ignore_errors=True)
        raise BackendUnavailable(f"LocalStack could not start on this host: {error}") from error
    try:
        external = handle.process is None
        yield Backend(
            "localstack",
            handle.endpoint.rstrip("/"),
            region,
            LOCALSTACK_ACCOUNT_ID,
            clock_file=None if external else clock_file,
        )
    finally:
        handle.stop()
        shutil.rmtree(clock_dir, ignore_errors=True)


@contextmanager
def start_backend(name: str, region: str = DEFAULT_REGION, log_dir: str | None = None) -> Iterator[Backend]:
    """Start (or attach to) a backend for the duration of the block."""
    backend_name = validate_backend_name(name)
    if backend_name == "moto":
        log_path = os.path.join(log_dir, "moto-server.log") if log_dir else None
        try:
            server_manager = moto_server(log_path=log_path)
            server = server_manager.__enter__()
        except Exception as error:
            raise BackendUnavailable(f"moto's server could not start: {error}") from error
        try:
            yield Backend("moto", server.endpoint_url, region, DEFAULT_ACCOUNT_ID, moto=server)
        finally:
            server_manager.__exit__(None, None, None)
        return
    with _localstack_backend(region) as backend:
        yield backend
