"""What a run is checked for, from the tables (a GetItem and the history per execution) and the files
the workers wrote: every execution ended, no double result or event, every re-run of a step explained."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chaos.record import Jump, RunData
from chaos.workdir import read_lines

if TYPE_CHECKING:
    from chaos.delays import DelayParts

# How long after its time a step's result may land (the engine's retries of an injected error included).
STORE_MARGIN_SECONDS = 2.0
# Terminal history events: an operation may have at most one.
TERMINAL_SUFFIXES = ("Succeeded", "Failed", "TimedOut", "Stopped", "Cancelled")


@dataclass
class Report:
    data: RunData
    executions: int = 0  # started ones plus the children they invoked
    ended: Counter[str] = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)
    double_results: list[str] = field(default_factory=list)
    double_events: list[str] = field(default_factory=list)
    bad_event_ids: list[str] = field(default_factory=list)
    step_runs: int = 0
    reruns: Counter[str] = field(default_factory=Counter)  # cause -> count
    unexplained: list[str] = field(default_factory=list)
    invocations: int = 0
    kills: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    fault_attempts: int = 0
    lags: list[float] = field(default_factory=list)  # seconds from a due time to the run
    # The same delays from the workers' own records, each split into its parts (chaos.delays).
    delay_parts: list[DelayParts] = field(default_factory=list)
    # Each execution's start and end as its record has them (virtual epoch seconds; no end while running).
    start_times: list[float] = field(default_factory=list)
    end_times: list[float] = field(default_factory=list)
    # Asynchronous invocations (direct wake-ups), and those whose attempts all failed or died: sent to the
    # work queue.
    async_invocations: int = 0
    async_destinations: int = 0
    # Ended executions whose record does not name the worker version that ran them.
    unpinned_ends: list[str] = field(default_factory=list)

    @property
    def failed_checks(self) -> list[str]:
        checks = {
            "executions lost": len(self.lost),
            "operations with two results": len(self.double_results),
            "history events recorded twice": len(self.double_events),
            "histories whose EventIds are not 1..N": len(self.bad_event_ids),
            "step re-runs not explained": len(self.unexplained),
            "callbacks completed twice": len(self.data.callback_repeats_accepted),
            "starts that failed": len(self.data.start_failures),
            "ended executions without the version that ran them": len(self.unpinned_ends),
        }
        return [f"{name}: {count}" for name, count in checks.items() if count]


def _epoch(value: Any) -> float:
    return value.timestamp() if isinstance(value, dt.datetime) else float(value)


def _event_key(event: Mapping[str, Any]) -> str:
    """An event without its position: two events with the same key are one fact recorded twice."""
    return json.dumps({k: v for k, v in event.items() if k != "EventId"}, sort_keys=True, default=str)


def check_history(
    execution_id: str, events: Sequence[Mapping[str, Any]], report: Report
) -> dict[tuple[str, int], float]:
    """Checks one history; returns when each attempt of each operation (by name) got its result."""
    ids = [event.get("EventId") for event in events]
    if ids != list(range(1, len(events) + 1)):
        report.bad_event_ids.append(execution_id)
    repeated = [key for key, count in Counter(_event_key(event) for event in events).items() if count > 1]
    report.double_events.extend(f"{execution_id}: {key[:200]}" for key in repeated)
    results: Counter[tuple[str, int]] = Counter()
    finals: Counter[str] = Counter()
    stored: dict[tuple[str, int], float] = {}
    for event in events:
        event_type = str(event.get("EventType", ""))
        if event_type.startswith("Execution") or not event_type.endswith(TERMINAL_SUFFIXES):
            continue
        retry = (event.get(f"{event_type}Details") or {}).get("RetryDetails") or {}
        attempt = int(retry.get("CurrentAttempt", 1))
        operation = str(event.get("Id"))
        results[(operation, attempt)] += 1
        # A failed attempt the retry strategy retries names its next attempt's delay: not the result.
        if "NextAttemptDelaySeconds" not in retry:
            finals[operation] += 1
        if event.get("Name"):
            stored.setdefault((str(event["Name"]), attempt), _epoch(event["EventTimestamp"]))
    report.double_results.extend(
        f"{execution_id} operation {op} attempt {attempt}"
        for (op, attempt), count in results.items()
        if count > 1
    )
    report.double_results.extend(
        f"{execution_id} operation {op}" for op, count in finals.items() if count > 1
    )
    return stored


def explain_reruns(
    ledger: Sequence[Mapping[str, Any]],
    results: Mapping[str, Mapping[tuple[str, int], float]],
    killed_invocations: set[str],
    report: Report,
    jumps: Sequence[Jump] = (),
) -> None:
    """Each run of a step body after its first must have begun while the step had no stored result;
    its cause is what became of the run before it."""
    runs: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for entry in ledger:
        runs[(str(entry["execution"]), str(entry["step"]))].append(entry)
    report.step_runs = len(ledger)
    for (execution_id, step), entries in runs.items():
        entries.sort(key=lambda entry: float(entry["at"]))
        for earlier, later in itertools.pairwise(entries):
            if earlier["outcome"] == "raised":
                cause = "retried by its retry strategy (the attempt raised)"
            elif earlier["outcome"] == "outlived its lease":
                cause = "its lease expired while it still ran (another worker took over)"
            elif earlier["invocation"] in killed_invocations:
                cause = "its worker was killed before the checkpoint"
            else:
                cause = "its checkpoint was not stored (an error reached the engine, or its lease lapsed)"
            report.reruns[cause] += 1
            # Compared in real time (clock skips left out of the stored result's time), with a margin: the
            # result's time is read when the engine applies it, before its write lands (retries included).
            stored = results.get(execution_id, {}).get((step, int(later["attempt"])))
            began = float(later.get("real", later["at"]))
            if stored is not None and real_time(stored, jumps) < began - STORE_MARGIN_SECONDS:
                report.unexplained.append(
                    f"{execution_id} step {step}: ran again at {later['at']:.3f}, its result was stored at "
                    f"{stored:.3f} ({cause})"
                )


def real_time(virtual: float, jumps: Sequence[Jump]) -> float:
    """The real time a virtual clock reading was taken at: the reading less the skips before it."""
    return virtual - sum(max(0.0, min(jump.end, virtual) - jump.start) for jump in jumps)


def corrected_lag(lag: float, run_at: float, jumps: Sequence[Jump]) -> float:
    """A wake-up's lag in real time: the virtual lag less the clock skips between its due time and run."""
    due = run_at - lag
    skipped = sum(max(0.0, min(jump.end, run_at) - max(jump.start, due)) for jump in jumps)
    return max(0.0, lag - skipped)


def wake_up_lags(workdir: Path, jumps: Sequence[Jump]) -> list[float]:
    lags: list[float] = []
    for path in sorted(workdir.glob("worker-*.out")):
        for record in read_lines(path):
            values = record.get("WakeUpLag")
            if not isinstance(values, list):
                continue
            run_at = float(record["_aws"]["Timestamp"]) / 1000
            lags.extend(corrected_lag(float(value) / 1000, run_at, jumps) for value in values)
    return lags


def analyse(client: Any, data: RunData, workdir: Path) -> Report:
    report = Report(data)
    ledger = [entry for entry in read_lines(workdir / "ledger.jsonl") if entry.get("execution")]
    executions = dict.fromkeys(data.started)
    executions.update(dict.fromkeys(str(entry["execution"]) for entry in ledger))  # children too
    report.executions = len(executions)
    report.lost.extend(
        f"{subject}: its begin event started no context" for subject, e in data.journeys.items() if e is None
    )
    results: dict[str, dict[tuple[str, int], float]] = {}
    version = data.settings.worker_version or None
    for execution_id in executions:
        description = client.describe_execution(execution_id)
        status = str(description["Status"])
        report.ended[status] += 1
        if description.get("StartTimestamp") is not None:
            report.start_times.append(_epoch(description["StartTimestamp"]))
        if description.get("EndTimestamp") is not None:
            report.end_times.append(_epoch(description["EndTimestamp"]))
        if status == "RUNNING":
            report.lost.append(execution_id)
        elif description.get("Version") != version:
            report.unpinned_ends.append(f"{execution_id}: {description.get('Version')!r}")
        results[execution_id] = check_history(
            execution_id, client.get_execution_history(execution_id), report
        )
    invocations = read_lines(workdir / "invocations.jsonl")
    report.invocations = sum(1 for record in invocations if "messages" in record)
    killed = {str(record["invocation"]) for record in invocations if "killed" in record}
    report.kills = Counter(str(record["killed"]) for record in invocations if "killed" in record)
    report.async_invocations = sum(1 for record in invocations if record.get("via") == "async")
    report.async_destinations = sum(1 for record in invocations if "destination" in record)
    explain_reruns(ledger, results, killed, report, data.jumps)
    for path in workdir.glob("faults-*.json"):
        saved = json.loads(path.read_text())
        report.faults.update(saved["counts"])
        report.fault_attempts += int(saved["attempts"])
    report.lags = wake_up_lags(workdir, data.jumps)
    return report
