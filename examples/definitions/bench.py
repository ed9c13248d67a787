"""Benchmark of the definitions path on the AWS adapters (moto in-process), in two phases: N subjects
each receive a `user.signed_up` event, which starts a context that runs to its first wait (it then waits
for `user.activated`); then each receives `user.activated`, which resumes its context, which runs to its
end. One worker (the entry's SQS batch handler, batches of 10) processes the events until the queue is
quiet, phase by phase: it runs the context an event starts or resumes at once, and handles any message
the runs leave (a run another worker holds, a wake-up).

Prints a Markdown section: events per second and AWS requests per event by operation, per phase.

    python examples/definitions/bench.py [--subjects 1000]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REGION = "us-east-1"
NAME = "sw-bench"


def run_bench(subjects: int) -> dict[str, Any]:
    """Run inside moto's mock (the caller sets fake credentials)."""
    from moto import mock_aws
    from stepwell.aws.clients import AwsClients
    from stepwell.clock import SystemClock
    from stepwell.core.registry import Registry
    from stepwell.features.definitions.actions import default_actions
    from stepwell.features.definitions.runtime import configure
    from stepwell.features.definitions.service import install
    from stepwell.testing.mock_deployment import create_deployment
    from stepwell.wiring.entry import EntryRuntime

    if "onboarding.send_email" not in default_actions:
        default_actions.register("onboarding.send_email", lambda inputs, context: None)

    with mock_aws():
        # The bench's producer speaks for its one tenant, as the module's event_sources would say.
        config = dataclasses.replace(
            create_deployment(name=NAME, region=REGION), event_sources={"bench": ["acme"]}
        )
        clients = AwsClients(region=REGION)
        registry = Registry()
        base = EntryRuntime.from_config(config, clients, registry=registry, clock=SystemClock())
        router = install(base.engine, config, clients, registry=registry)

        # As the deployed worker is wired (stepwell.wiring.entry.handler): bus events go to the router.
        runtime = EntryRuntime(base.engine, base.reconciler, event_router=router)
        router.runtime.definitions.set_workflow("acme", json.loads((HERE / "onboarding.json").read_text()))
        sqs = clients.sqs

        def send(detail_type: str, prefix: str) -> None:
            for start in range(0, subjects, 10):
                sqs.send_message_batch(
                    QueueUrl=config.work_queue_url,
                    Entries=[
                        {
                            "Id": str(index),
                            "MessageBody": json.dumps(
                                {
                                    "version": "0",
                                    "id": f"{prefix}-{index}",
                                    "detail-type": detail_type,
                                    "source": "bench",
                                    "detail": {
                                        "domain": "acme",
                                        "subjectId": f"user-{index}",
                                        "data": {"email": f"u{index}@x.io"},
                                    },
                                }
                            ),
                        }
                        for index in range(start, min(start + 10, subjects))
                    ],
                )

        def drain() -> tuple[int, float, dict[str, int]]:
            """Handle messages until the queue is quiet: (messages, seconds, AWS requests by API)."""
            clients.counter.reset()
            handled = 0
            began = time.perf_counter()
            while True:
                messages = sqs.receive_message(QueueUrl=config.work_queue_url, MaxNumberOfMessages=10).get(
                    "Messages", []
                )
                if not messages:
                    break
                records = [
                    {"messageId": m["MessageId"], "body": m["Body"], "eventSource": "aws:sqs"}
                    for m in messages
                ]
                failures = runtime.handle_event({"Records": records}, None)["batchItemFailures"]
                if failures:
                    raise RuntimeError(f"batch failures: {failures}")
                sqs.delete_message_batch(
                    QueueUrl=config.work_queue_url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
                    ],
                )
                handled += len(messages)
            calls = clients.counter.snapshot()["calls"]
            # The driver's own SQS calls (receive, delete) are what Lambda's event source mapping does: not
            # counted.
            for key in ("sqs.ReceiveMessage", "sqs.DeleteMessageBatch"):
                calls.pop(key, None)
            return handled, time.perf_counter() - began, calls

        def pending_schedules() -> int:
            """One-time schedules (wake-ups) left in the group after a phase; read outside the count."""
            pages = clients.scheduler.get_paginator("list_schedules").paginate(
                GroupName=config.schedule_group_name
            )
            return sum(len(page.get("Schedules", [])) for page in pages)

        send("user.signed_up", "signup")
        handled, elapsed, calls = drain()
        pending_after_start = pending_schedules()
        waiting = sum(
            1 for c in router.runtime.contexts.get_all_contexts("acme", limit=1000).items if c.waiting
        )
        send("user.activated", "activated")
        resume_handled, resume_elapsed, resume_calls = drain()
        pending_after_resume = pending_schedules()
        activated = sum(
            1
            for c in router.runtime.contexts.get_all_contexts("acme", limit=1000).items
            if c.status == "SUCCEEDED"
        )
        configure(None)
    return {
        "subjects": subjects,
        "messages": handled,
        "seconds": elapsed,
        "calls": calls,
        "waiting_sample": waiting,
        "pending_schedules": pending_after_start,
        "resume": {
            "messages": resume_handled,
            "seconds": resume_elapsed,
            "calls": resume_calls,
            "pending_schedules": pending_after_resume,
        },
        "succeeded_sample": activated,
    }


def markdown(result: dict[str, Any]) -> str:
    subjects = result["subjects"]
    starts: dict[str, int] = result["calls"]
    resumes: dict[str, int] = result["resume"]["calls"]
    seconds = result["seconds"] + result["resume"]["seconds"]
    per_request_ms = 1000 * seconds / max(1, sum(starts.values()) + sum(resumes.values()))
    lines = [
        f"## Definitions: {subjects} subjects each receiving two events (moto in-process, one worker)",
        "",
        "Each subject's `user.signed_up` starts a context that runs to its first wait (for `user.activated`, "
        "with a timeout); then its `user.activated` resumes the context, which runs to its end.",
        "",
        "- messages handled (the events, and any invocation they left to a message): "
        f"{result['messages']} to start, {result['resume']['messages']} to resume",
        f"- events per second: {subjects / result['seconds']:.1f} starting, "
        f"{subjects / result['resume']['seconds']:.1f} resuming",
        f"- AWS requests per event that starts a context: {sum(starts.values()) / subjects:.2f}",
        f"- AWS requests per event that resumes a waiting context: {sum(resumes.values()) / subjects:.2f}",
        "- wake-ups left scheduled per event (one-time schedules: the contexts' timeouts): "
        f"{result['pending_schedules'] / subjects:.2f} after the starting events, "
        f"{result['resume']['pending_schedules'] / subjects:.2f} after the resuming events (a resumed "
        "context's run deletes the timeout it no longer needs, one DeleteSchedule, which Scheduler does not "
        "bill; left in place, it would fire a day later: a Scheduler invocation, an SQS message and a Lambda "
        "invocation that find nothing due)",
        f"- moto in-process answers a request in about {per_request_ms:.0f} ms "
        "here, which bounds events per second; requests per event is what carries over to AWS",
        "",
        "| request | per starting event | per resuming event |",
        "| --- | --- | --- |",
    ]
    lines += [
        f"| {key} | {starts.get(key, 0) / subjects:.2f} | {resumes.get(key, 0) / subjects:.2f} |"
        for key in sorted({*starts, *resumes})
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=1000)
    args = parser.parse_args(argv)
    if args.subjects < 1:
        parser.error(f"--subjects must be at least 1, got {args.subjects}")
    # moto only: never a real account.
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        os.environ.pop(variable, None)
    os.environ["AWS_ACCESS_KEY_ID"] = "testing"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
    sys.stdout.write(markdown(run_bench(args.subjects)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
