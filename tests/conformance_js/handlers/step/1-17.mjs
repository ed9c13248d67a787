// 1.17: an at-most-once step whose process dies mid-step, without retries.
import { withDurableExecution, retryPresets, StepSemantics } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const text = event.Input;
  return await context.step(
    "at_most_once_flaky_step",
    async (stepContext) => {
      stepContext.logger.info(`running step for ${text}`);
      process.exit(1); // the Lambda process dies mid-step
    },
    { retryStrategy: retryPresets.noRetry, semantics: StepSemantics.AtMostOncePerRetry },
  );
});
