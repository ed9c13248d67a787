"""Stepwell's LocalStack plugin: a Lambda runtime executor that needs no Docker.

`plugin` registers the executor with LocalStack, `executor` is the LocalStack side,
`runtime` and `worker` are standard-library scripts run in the Lambda interpreter
(`node_worker` is runtime's Node.js worker, on the test harness's node_bootstrap.mjs),
`launcher` starts LocalStack so that it dies with the process that started it.
"""

EXECUTOR_NAME = "stepwell-local"
