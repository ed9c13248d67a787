"""`make chaos` (run by tools/chaos.py): run a mix of workflows under injected faults and check nothing is
lost or done twice.

The run: moto's server (stepwell.testing.moto_server), or LocalStack with `--backend localstack`
(stepwell.testing.backends), holds the module's resources (stepwell.testing.mock_deployment); several worker
PROCESSES each play the SQS event source mapping (receive up to 10 messages, hand them shuffled to
`stepwell.wiring.entry.EntryRuntime.handle_event`, delete the successes; the rest come back after the
visibility timeout) and Lambda's asynchronous invocations (the one-time wake-up schedules invoke the
worker's alias: each invocation waits in a queue of its own, as in Lambda, is run at least once, run again
after a failure or a kill up to 3 attempts, and then sent to the work queue as its on-failure destination
record), taking from the two sources in turn, on one virtual clock the parent keeps in a file. The parent
starts the executions (`tools/chaos_workflows.py`; every seventh is a definitions context: a `chaos.begin`
bus event starts it, a `chaos.next` event a few seconds later resumes it), completes callbacks from a
concurrent sender (each one twice: the second must be refused), fires due Scheduler schedules, skips the
clock to the next one (once the queues hold no ready message: chaos.drive), sends a `{"kind": "reconcile"}`
message every few seconds, and plays the operator the DLQ's alarm calls: what the DLQ holds (a message whose
every receive met a fault or a kill) goes back to the work queue every few seconds, as `stepwell dlq
redrive` does (counted). The workers run as published version 1 of the worker (`--worker-version`), as the
module deploys them, so every execution is pinned to it; `--worker-version ''` runs them unversioned.
Choices that keep the run bounded: botocore makes 3 attempts per call (8 deployed) and backs off 0.1 s, not
1 s, after a throttle; the lease is 3 s (900 s deployed); the queue's visibility timeout is 8 s.

Faults (stepwell.testing.faults): a share of the engine's DynamoDB, SQS and Scheduler attempts fail with
throttling or 500s (botocore retries them; a share of calls fails every attempt, so errors reach the
engine); every SQS message the engine, the client or a schedule sends is sent twice, each copy with a
random extra delay, and each batch is shuffled; a worker kills itself with SIGKILL in a share of its
invocations (from a timer while the batch runs, or from a step body right after its ledger line: before
its checkpoint); the `slow` workflow's step outlives the engine's (shortened) lease, so another worker
takes the execution over while it still runs.

Checks, from the tables (a GetItem and the history per execution): every started execution ended; no
operation has two results; no history event is recorded twice (EventIds 1..N, no event repeated); no
callback completed twice; every ended execution names the worker version that ran it; every begin event
started its context; every step body (and definitions action) re-run, from the ledger, began while that
attempt had no stored result, with its cause named. Figures: throughput, injected faults by kind, kills per
invocation, and the due-to-run delay of wake-ups (the WakeUpLag metric lines the workers write, less the
clock skips in between), split into its parts by chaos.delays. A run with any loss, double result or
unexplained re-run exits 1.

Where each part lives: chaos.settings (the run's settings and the kinds it starts), chaos.run (the run),
chaos.drive (the parent's part), chaos.worker and chaos.worker_pool (the worker processes), chaos.workdir
(the files they share), chaos.record (what the parent records), chaos.checks (the checks),
chaos.render (the section of BENCHMARKS.md), chaos.cli (the command line).
"""
