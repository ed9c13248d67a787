"""The sections of the bench, in the order they appear in BENCHMARKS.md. Add one by writing a module
with a function of the run's `Options` that returns a `SectionResult`, and listing it in `SECTIONS`."""

from __future__ import annotations

from collections.abc import Callable

from bench.section import Options, SectionResult
from bench.sections.api import section_api
from bench.sections.aws import section_aws
from bench.sections.cpu import section_cpu
from bench.sections.definitions import section_definitions, start_definitions
from bench.sections.definitions_replay import section_definitions_replay
from bench.sections.long_lived import section_long_lived
from bench.sections.operations import section_operations
from bench.sections.remote import section_remote
from bench.sections.tracing import section_tracing
from bench.sections.versions import section_versions

# (name for --sections, function).
SECTIONS: list[tuple[str, Callable[[Options], SectionResult]]] = [
    ("aws", section_aws),
    ("operations", section_operations),
    ("versions", section_versions),
    ("long-lived", section_long_lived),
    ("definitions", section_definitions),
    ("definitions-replay", section_definitions_replay),
    ("cpu", section_cpu),
    ("api", section_api),
    ("remote", section_remote),
    ("tracing", section_tracing),
]
# Started before the sections run (in the background), for the sections selected: name -> starter.
STARTERS: dict[str, Callable[[Options], None]] = {"definitions": start_definitions}
