"""The console's Pause, Resume and Delete buttons against a deployment in moto's in-process mock: each a POST
with the console's form token, its outcome or its refusal shown on the execution's page, and the list's
status filter for the statuses they lead to."""

from __future__ import annotations

import re

from .conftest import Console


def _text(response: object) -> str:
    return response.get_data(as_text=True)  # type: ignore[attr-defined]


def _page(console: Console, execution_id: str) -> str:
    return _text(console.http.get("/execution", query_string={"id": execution_id}))


def _settle(console: Console) -> None:
    """The worker takes the queue's messages (a pause settles, a delete runs); no timer fires."""
    console.driver.run_until_quiet(fire_schedules=False)


def _buttons(page: str) -> set[str]:
    return set(re.findall(r'<button type="submit" id="([a-z]+)"', page))


def test_pause_and_resume_need_a_post_with_the_console_token(console: Console) -> None:
    execution_id = console.client.start_execution("order-story", {}, execution_name="to-pause")
    console.run_until_callback(execution_id)
    assert _buttons(_page(console, execution_id)) >= {"pause", "stop"}
    assert not _buttons(_page(console, execution_id)) & {"resume", "delete"}

    for path in ("/execution/pause", "/execution/resume", "/execution/delete"):
        forged = console.http.post(path, data={"id": execution_id})
        assert forged.status_code == 403 and "token" in _text(forged)
        wrong = console.http.post(path, data={"id": execution_id, "csrf_token": "guess"})
        assert wrong.status_code == 403
        assert console.http.get(path, query_string={"id": execution_id}).status_code == 405
    assert console.client.describe_execution(execution_id)["Status"] == "RUNNING"


def test_pause_then_resume_from_the_executions_page(console: Console) -> None:
    execution_id = console.client.start_execution("order-story", {}, execution_name="paused")
    callback_id = console.run_until_callback(execution_id)

    paused = console.post("/execution/pause", {"id": execution_id, "reason": "payments <down>"})
    assert paused.status_code == 302
    assert f"pausing {execution_id}" in _text(console.http.get(paused.headers["Location"]))
    _settle(console)
    description = console.client.describe_execution(execution_id)
    assert description["Status"] == "PAUSED"
    assert description["PauseDetails"]["Reason"] == "payments <down>"
    assert description["PauseDetails"]["ExecutionTimeoutPaused"] is True

    page = _page(console, execution_id)
    assert 'id="status">PAUSED' in page
    assert _buttons(page) >= {"resume", "stop"} and not _buttons(page) & {"pause", "delete"}
    assert "payments &lt;down&gt;" in page and "is paused too" in page
    assert callback_id in page  # a paused execution's callbacks still complete
    assert 'data-poll="' in page  # the page reloads when it is resumed elsewhere

    again = console.post("/execution/pause", {"id": execution_id})
    assert "was paused already" in _text(console.http.get(again.headers["Location"]))

    listed = _text(console.http.get("/executions?status=PAUSED"))
    assert execution_id in listed
    assert execution_id not in _text(console.http.get("/executions"))  # RUNNING by default

    resumed = console.post("/execution/resume", {"id": execution_id, "reason": "payments back"})
    page = _text(console.http.get(resumed.headers["Location"]))
    assert f"resumed {execution_id}" in page and 'id="status">RUNNING' in page
    _settle(console)
    events = [event["EventType"] for event in console.client.get_execution_history(execution_id)]
    assert events.count("ExecutionPaused") == 1 and events.count("ExecutionResumed") == 1

    not_paused = console.post("/execution/resume", {"id": execution_id})
    assert "was not paused" in _text(console.http.get(not_paused.headers["Location"]))


def test_a_pause_may_keep_the_execution_timeout_running(console: Console) -> None:
    execution_id = console.client.start_execution("order-story", {}, execution_name="keeps-running")
    console.run_until_callback(execution_id)
    console.post("/execution/pause", {"id": execution_id, "timeout_keeps_running": "on"})
    _settle(console)
    description = console.client.describe_execution(execution_id)
    assert description["Status"] == "PAUSED"
    assert description["PauseDetails"]["ExecutionTimeoutPaused"] is False
    assert "keeps running" in _page(console, execution_id)


def test_delete_an_ended_execution_shows_deleting_until_it_is_gone(console: Console) -> None:
    execution_id = console.client.start_execution("echo", {"n": 1}, execution_name="to-delete")
    console.run()
    page = _page(console, execution_id)
    assert 'id="status">SUCCEEDED' in page
    assert "delete" in _buttons(page) and not _buttons(page) & {"pause", "resume", "stop"}
    assert 'data-poll="' not in page  # an ended execution's page does not poll

    deleted = console.post("/execution/delete", {"id": execution_id})
    assert deleted.status_code == 302
    page = _text(console.http.get(deleted.headers["Location"]))
    assert f"deleting {execution_id}" in page and 'id="status">DELETING' in page
    assert 'id="deleting"' in page and 'data-poll="' in page and not _buttons(page)
    assert execution_id in _text(console.http.get("/executions?status=DELETING"))

    _settle(console)
    gone = console.http.get("/execution", query_string={"id": execution_id})
    assert gone.status_code == 404 and execution_id in _text(gone)
    assert console.http.get("/api/execution", query_string={"id": execution_id}).status_code == 404


def test_what_the_execution_status_does_not_allow_is_shown_as_the_pages_error(console: Console) -> None:
    running = console.client.start_execution("order-story", {}, execution_name="still-running")
    console.run_until_callback(running)
    refused = console.post("/execution/delete", {"id": running})
    page = _text(console.http.get(refused.headers["Location"]))
    assert "flash-error" in page and "ExecutionStateConflict" in page and "has not ended" in page
    assert console.client.describe_execution(running)["Status"] == "RUNNING"

    ended = console.client.start_execution("echo", {"n": 2}, execution_name="ended")
    console.run()
    for path in ("/execution/pause", "/execution/resume"):
        conflict = console.post(path, {"id": ended})
        page = _text(console.http.get(conflict.headers["Location"]))
        assert "flash-error" in page and "ExecutionStateConflict" in page
    assert console.client.describe_execution(ended)["Status"] == "SUCCEEDED"

    unknown = "default#echo#nobody/nobody"
    missing = console.post("/execution/pause", {"id": unknown})
    page = _text(console.http.get(missing.headers["Location"]))
    assert "ExecutionNotFound" in page
    too_long = console.post("/execution/pause", {"id": running, "reason": "x" * 2000})
    page = _text(console.http.get(too_long.headers["Location"]))
    assert "flash-error" in page and 'id="status">RUNNING' in page


def test_the_status_filter_offers_the_pause_and_delete_statuses(console: Console) -> None:
    listing = _text(console.http.get("/executions"))
    options = re.findall(r'<option value="([A-Z_]+)"', listing)
    assert {"RUNNING", "PAUSING", "PAUSED", "DELETING"} <= set(options)
    assert console.http.get("/executions?status=PAUSING").status_code == 200
