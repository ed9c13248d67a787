"""Registers the local-process executor under LAMBDA_RUNTIME_EXECUTOR=stepwell-local."""

from typing import Any

from localstack.services.lambda_.invocation.plugins import RuntimeExecutorPlugin

from stepwell_localstack import EXECUTOR_NAME


class StepwellLocalExecutorPlugin(RuntimeExecutorPlugin):
    # plux names the plugin after this attribute; it must equal the entry point's name.
    name = EXECUTOR_NAME

    def load(self, *args: Any, **kwargs: Any) -> type:
        from stepwell_localstack.executor import LocalProcessRuntimeExecutor

        return LocalProcessRuntimeExecutor
