"""The execution page shows the execution's trace header and its OpenTelemetry trace id (the header is
stored on the deployment's DynamoDB table and read back)."""

from __future__ import annotations

import re

from stepwell.core.tracing import parse_trace_header

from .conftest import Console


def test_the_execution_page_shows_its_trace_header_and_trace_id(console: Console) -> None:
    execution_id = console.client.start_execution("echo", {"a": 1}, execution_name="traced", subject_id="t")
    console.run()
    header = console.client.describe_execution(execution_id)["TraceHeader"]
    trace_id = parse_trace_header(header).trace_id
    assert re.fullmatch(r"[0-9a-f]{32}", trace_id)

    page = console.http.get("/execution", query_string={"id": execution_id}).get_data(as_text=True)
    assert f'<span class="mono" id="trace-header">{header}</span>' in page
    assert f'<span class="mono" id="trace-id">{trace_id}</span>' in page
