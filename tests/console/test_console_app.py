"""The console's pages and buttons against a deployment in moto's in-process mock."""

from __future__ import annotations

import json
import re

from stepwell.model import ExecutionStatus

from .conftest import ACCESS_TOKEN, CSRF, Console


def _text(response: object) -> str:
    return response.get_data(as_text=True)  # type: ignore[attr-defined]


def _rows(svg_page: str) -> list[str]:
    return re.findall(r'<g class="row [^"]*" data-name="([^"]*)"', svg_page)


def test_list_filters_by_status_workflow_and_subject_and_pages(console: Console) -> None:
    first = console.client.start_execution("echo", {"n": 1}, execution_name="e-1", subject_id="s-1")
    second = console.client.start_execution("echo", {"n": 2}, execution_name="e-2", subject_id="s-2")
    story = console.client.start_execution("order-story", {}, execution_name="story", subject_id="s-1")
    console.run_until_callback(story)

    running = _text(console.http.get("/executions"))  # RUNNING by default
    assert story in running and first not in running

    by_workflow = _text(console.http.get("/executions?workflow=echo"))
    assert first in by_workflow and second in by_workflow and story not in by_workflow

    by_subject = _text(console.http.get("/executions?domain=default&subject=s-1"))
    assert first in by_subject and story in by_subject and second not in by_subject

    page_one = _text(console.http.get("/executions?workflow=echo&limit=1"))
    next_link = re.search(r'id="next-page" href="([^"]+)"', page_one)
    assert next_link is not None
    page_two = _text(console.http.get(next_link.group(1).replace("&amp;", "&")))
    shown = [execution for execution in (first, second) if execution in page_one or execution in page_two]
    assert sorted(shown) == sorted([first, second])
    assert (first in page_one) != (first in page_two)

    api = console.http.get("/api/executions?status=SUCCEEDED").get_json()
    assert sorted(row["ExecutionId"] for row in api["Executions"]) == sorted([first, second])


def test_a_bad_filter_is_a_clear_error(console: Console) -> None:
    response = console.http.get("/executions?status=DONE")
    assert response.status_code == 400
    assert "invalid status &#39;DONE&#39;" in _text(response) and "RUNNING" in _text(response)
    limit = console.http.get("/executions?workflow=echo&limit=5000")
    assert limit.status_code == 400 and "limit &#39;5000&#39; is not a whole number from 1 to 100" in _text(
        limit
    )
    subject_alone = console.http.get("/api/executions?status=RUNNING&subject=s-1")
    assert subject_alone.status_code == 400 and "domain" in subject_alone.get_json()["error"]
    missing = console.http.get("/execution?id=default%23echo%23nobody/nobody")
    assert missing.status_code == 404 and "nobody" in _text(missing)


def test_execution_page_draws_the_timeline_with_retries_waits_callbacks_and_branches(
    console: Console,
) -> None:
    execution_id = console.client.start_execution("order-story", {"note": "hi"}, execution_name="story")
    callback_id = console.run_until_callback(execution_id)

    page = _text(console.http.get("/execution", query_string={"id": execution_id}))
    assert 'id="status">RUNNING' in page
    assert callback_id in page  # the open callback's forms
    rows = _rows(page)
    assert rows[:2] == ["execution", "invocations"]
    assert {"charge", "cooling-off", "approval"} <= set(rows)
    charge = re.search(r'data-name="charge".*?</g>', page, re.S)
    assert charge is not None
    states = re.findall(r'data-state="([a-z-]+)"', charge.group(0))
    assert states == ["retrying", "retry-delay", "succeeded"]
    # The SDK's callback and submitter step fold into the wait_for_callback, which waits; a link shows them.
    approval = re.search(r'data-kind="WaitForCallback".*?</g>', page, re.S)
    assert approval is not None and 'data-state="waiting"' in approval.group(0)
    assert 'data-kind="Callback"' not in page and "approval submitter" not in rows
    assert "internal=1" in page
    everything = _text(console.http.get("/execution", query_string={"id": execution_id, "internal": "1"}))
    assert {"approval create callback id", "approval submitter"} <= set(_rows(everything))
    approval_callback = re.search(r'data-kind="Callback".*?</g>', everything, re.S)
    assert approval_callback is not None and 'data-state="waiting"' in approval_callback.group(0)
    assert "hide them" in everything

    console.post(
        "/callback",
        {
            "callback_id": callback_id,
            "outcome": "success",
            "result": '{"by": "maria"}',
            "execution_id": execution_id,
        },
    )
    console.run()
    done = _text(console.http.get("/execution", query_string={"id": execution_id}))
    assert 'id="status">SUCCEEDED' in done
    rows = _rows(done)
    assert {"fan-out", "invoice", "ship"} <= set(rows)
    # Branches and their steps sit under the parallel operation, indented.
    depth = {
        name: int(x) for name, x in re.findall(r'data-name="([^"]+)".*?class="row-label" x="(\d+)"', done)
    }
    assert depth["invoice"] > depth["fan-out"] and depth["ship"] > depth["fan-out"]
    assert rows.index("fan-out") < rows.index("invoice")
    result = json.loads(console.client.describe_execution(execution_id)["Result"])
    assert result["approval"] == '{"by": "maria"}'
    assert "&#34;approval&#34;" in done or "&quot;approval&quot;" in done  # pretty result, escaped
    assert (
        console.http.get("/api/execution", query_string={"id": execution_id}).get_json()["Execution"][
            "Status"
        ]
        == "SUCCEEDED"
    )


def test_user_data_is_shown_as_text_never_as_markup(console: Console) -> None:
    hostile = "<script>alert('pwned')</script>"
    execution_id = console.client.start_execution(
        "echo", {"html": hostile}, execution_name="hostile", subject_id="x"
    )
    console.run()
    page = _text(console.http.get("/execution", query_string={"id": execution_id}))
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(" in page
    listing = _text(console.http.get("/executions?workflow=echo"))
    assert "<script>alert" not in listing
    policy = console.http.get("/executions").headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy


def test_stop_needs_a_post_with_the_console_token(console: Console) -> None:
    execution_id = console.client.start_execution("order-story", {}, execution_name="to-stop")
    console.run_until_callback(execution_id)

    forged = console.http.post("/execution/stop", data={"id": execution_id})
    assert forged.status_code == 403 and "token" in _text(forged)
    wrong = console.http.post("/execution/stop", data={"id": execution_id, "csrf_token": "guess"})
    assert wrong.status_code == 403
    assert console.http.get("/execution/stop", query_string={"id": execution_id}).status_code == 405
    assert console.client.describe_execution(execution_id)["Status"] == "RUNNING"

    stopped = console.post("/execution/stop", {"id": execution_id, "error_type": "Operator.Cancelled"})
    assert stopped.status_code == 302
    description = console.client.describe_execution(execution_id)
    assert description["Status"] == ExecutionStatus.STOPPED.value
    assert description["Error"]["ErrorType"] == "Operator.Cancelled"
    page = _text(console.http.get(stopped.headers["Location"]))
    assert f"stopped {execution_id}" in page and 'id="status">STOPPED' in page
    assert 'id="stop"' not in page  # no buttons on an ended execution

    again = console.post("/execution/stop", {"id": execution_id})
    assert "had already ended" in _text(console.http.get(again.headers["Location"]))


def test_callback_failure_and_bad_callbacks_are_reported(console: Console) -> None:
    execution_id = console.client.start_execution("order-story", {}, execution_name="refused")
    callback_id = console.run_until_callback(execution_id)

    unknown = console.post(
        "/callback", {"callback_id": "cbnope", "outcome": "success", "execution_id": execution_id}
    )
    assert "CallbackNotFound" in _text(console.http.get(unknown.headers["Location"]))
    odd = console.post(
        "/callback", {"callback_id": callback_id, "outcome": "maybe", "execution_id": execution_id}
    )
    assert "&#39;maybe&#39; is not one of success, failure" in _text(
        console.http.get(odd.headers["Location"])
    )

    console.post(
        "/callback",
        {
            "callback_id": callback_id,
            "outcome": "failure",
            "error_type": "Approval.Refused",
            "error_message": "no stock",
            "execution_id": execution_id,
        },
    )
    console.run()
    description = console.client.describe_execution(execution_id)
    assert description["Status"] == "FAILED"
    page = _text(console.http.get("/execution", query_string={"id": execution_id}))
    assert 'id="execution-error"' in page


def test_redrive_moves_the_dead_letters_back(console: Console) -> None:
    sqs = console.deployment.clients.sqs
    config = console.deployment.config
    sqs.send_message(QueueUrl=config.dlq_url, MessageBody=json.dumps({"kind": "reconcile"}))
    response = console.post("/dlq/redrive", {})
    assert response.status_code == 302
    page = _text(console.http.get(response.headers["Location"]))
    assert "redrive started" in page or "moved 1 messages" in page
    moved = sqs.receive_message(QueueUrl=config.work_queue_url, MaxNumberOfMessages=10)
    assert [json.loads(message["Body"]) for message in moved.get("Messages", [])] == [{"kind": "reconcile"}]
    assert f'value="{CSRF}"' in page  # the form carries the token


def test_a_request_for_another_host_name_is_refused(console: Console) -> None:
    """A page whose domain was re-pointed at 127.0.0.1 (DNS rebinding) gets neither data nor the token."""
    token = {"token": ACCESS_TOKEN}  # the test client sends its cookie only to its own host name
    refused = console.http.get("/executions", headers={"Host": "attacker.example:8080"}, query_string=token)
    assert refused.status_code == 400 and CSRF not in _text(refused)
    assert "Set-Cookie" not in refused.headers
    assert _text(refused) == "the console does not answer to the host 'attacker.example:8080'\n"
    allowed = console.http.get("/executions", headers={"Host": "127.0.0.1:8080"}, query_string=token)
    assert allowed.status_code == 200
