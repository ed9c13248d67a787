"""`make bench` (run by tools/bench.py): measure Stepwell and write BENCHMARKS.md.

A benchmark, not a test: it measures and reports, it asserts nothing about time. Every figure in the file
is measured by the run that writes it; the prices are list prices (bench.prices) applied to the measured
counts.

Sections (bench.sections, one module each; `SECTIONS` lists them in the file's order):

- aws: N sequential steps through the worker's Lambda entry handler (`stepwell.wiring.entry.EntryRuntime`, as
  the deployed worker runs it) over the DynamoDB store, the SQS queue, EventBridge Scheduler and S3
  adapters, on moto in-process (`moto.mock_aws`). AWS requests per durable operation by API, DynamoDB units
  from item sizes, cost per million operations at us-east-1 list prices.
- operations: the same set-up, for a mixed workflow and for the marginal cost of each non-step operation.
- versions: the same set-up, for what pinning executions to worker versions costs: once per execution,
  per message outside a transition, and per message while executions run on an older version.
- long-lived: one execution of N step-and-wait cycles (a step, then a one-hour wait) through the same
  entry runtime, kept across messages as a warm Lambda container keeps it: read and write units of the
  message that runs cycle 10, 100 and N, and of the same cycles on a worker without the journal cache.
- definitions: examples/definitions/bench.py, in its own process beside the others.
- definitions-replay: CPU per wake-up of a definition's loop (trigger, condition, wait 1 s, condition) at
  wake-up 10 and 500, on the local backend with a virtual clock: a replay reads the decided conditions
  from the log, so a wake-up costs its new work (issue 37).
- api: each operation of the durable execution API (stepwell.features.lambda_api) through its handler over
  the counted clients: AWS requests, DynamoDB units and cost per call, the API function's duration modelled
  from its own time plus a fixed time per AWS request.
- cpu: CPU time per operation (time.process_time) on the local backend (stepwell.testing.local) and in
  the SDK's own local test runner (aws_durable_execution_sdk_python_testing.DurableFunctionTestRunner),
  each size in a fresh subprocess.
- remote: per run of a 3- and a 100-step workflow registered in the worker and as the user's own Python and
  JavaScript durable functions (issue 41; the stack in bench.remote_stack): AWS requests by API, DynamoDB
  units, Lambda invocations and GB-seconds (the worker's and the API function's apart from the function's),
  cost per million runs.
- tracing: what the worker's own spans (issue 43) cost, off and on: CPU per operation on the local backend,
  AWS requests and OTLP exports per operation through the worker's entry on moto (to a receiver in another
  process).

Lambda GB-seconds: the remote section counts them (every invocation's modelled duration), the api section
the API function's per call; the others leave Lambda compute out on every side (document.HOW_MEASURED).

What the moto sections share: bench.moto_stack (the deployment, driven as AWS drives it, every request
counted), bench.meter (DynamoDB units from item sizes), bench.measurement (what a run counted and what it
costs), bench.tables. The file: bench.document; the command line: bench.cli.
"""
