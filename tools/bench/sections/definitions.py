"""Section `definitions`: the definitions engineer's bench (examples/definitions/bench.py), N subjects
each receiving two events on the AWS adapters in moto, run in its own process beside the other sections."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence

from bench.section import DEFINITIONS_TIMEOUT_SECONDS, ROOT, Options, SectionResult, log
from bench.targets import TARGET_DEFINITIONS_RESUME_REQUESTS, TARGET_DEFINITIONS_START_REQUESTS
from bench.text import fmt

DEFINITIONS_BENCH = ROOT / "examples" / "definitions" / "bench.py"


class Background:
    """A measurement that runs in its own process while other sections run (one that counts requests, so
    sharing the machine does not change its figures), collected by its section."""

    def __init__(self, command: Sequence[str], timeout: float) -> None:
        self.command = list(command)
        self.timeout = timeout
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            self.command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def result(self) -> tuple[int | None, str, str]:
        """(return code or None on timeout, stdout, stderr)."""
        remaining = max(1.0, self.timeout - (time.perf_counter() - self.started))
        try:
            out, err = self.process.communicate(timeout=remaining)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, err = self.process.communicate()
            return None, out, err
        return self.process.returncode, out, err


def start_definitions(options: Options) -> None:
    if DEFINITIONS_BENCH.exists():
        log(f"definitions: starting {DEFINITIONS_BENCH.relative_to(ROOT)} in the background")
        options.background["definitions"] = Background(
            [sys.executable, str(DEFINITIONS_BENCH), "--subjects", str(options.definitions_subjects)],
            DEFINITIONS_TIMEOUT_SECONDS,
        )


def section_definitions(options: Options) -> SectionResult:
    """The definitions engineer's bench (`examples/definitions/bench.py`): N subjects each receiving an
    event on the AWS adapters in moto, in its own process (started with the run, see `start_definitions`).
    Its markdown is embedded as it prints it."""
    subjects = options.definitions_subjects
    title = f"Definitions: {subjects:,} subjects each receiving two events (moto backend)"
    script = DEFINITIONS_BENCH.relative_to(ROOT)
    background = options.background.get("definitions")
    if background is None:
        return SectionResult(
            title, f"Not run: `{script}` does not exist.", [f"Definitions: {script} missing"]
        )
    log(f"definitions: waiting for {script}")
    code, out, err = background.result()
    if code is None:
        text = (
            f"Not measured: `{script} --subjects {subjects}` did not finish within "
            f"{background.timeout:.0f} s."
        )
        return SectionResult(title, text, [f"Definitions: {text}"])
    if code != 0:
        tail = "\n".join(err.strip().splitlines()[-5:])
        text = f"Not measured: `{script} --subjects {subjects}` failed:\n\n```\n{tail}\n```"
        return SectionResult(title, text, [f"Definitions: failed ({tail.splitlines()[-1] if tail else ''})"])
    lines = out.strip().splitlines()
    if lines and lines[0].startswith("## "):
        title, lines = lines[0][3:].strip(), lines[1:]
    intro = (
        f"Measured by `{script} --subjects {subjects}` (its own deployment in moto, in its own process, "
        "running beside the moto sections above), embedded as it reports."
    )
    if subjects != 1_000:
        intro += (
            f" {subjects:,} subjects, not 1,000: on moto in-process the time of this bench grows faster than "
            "the subjects (moto answers slower as its tables grow), and 1,000 do not fit `make bench`'s "
            "ten-minute budget; `tools/bench.py --sections definitions --definitions-subjects 1000` runs "
            "them."
        )
    summary = [f"Definitions ({subjects:,} subjects):"] + [
        "  " + line[2:] for line in lines if line.startswith("- ")
    ]
    targets: list[tuple[str, str, str]] = []
    wanted = {  # the bench's line -> (target, what the target row says)
        "- AWS requests per event that starts a context:": (
            TARGET_DEFINITIONS_START_REQUESTS,
            "AWS requests per event that starts a context (and its first run)",
        ),
        "- AWS requests per event that resumes a waiting context:": (
            TARGET_DEFINITIONS_RESUME_REQUESTS,
            "AWS requests per event that resumes a waiting context (and the run it causes)",
        ),
    }
    for line in lines:  # "- AWS requests per event that starts a context: 18.00"
        for prefix, (target, label) in wanted.items():
            if line.startswith(prefix):
                requests = float(line.split(":", 1)[1])
                verdict = "met" if requests <= target else "NOT met"
                targets.append((f"definitions: <= {target} {label}", fmt(requests), verdict))
    return SectionResult(title, intro + "\n\n" + "\n".join(lines).strip(), summary, targets)
