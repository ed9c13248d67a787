// 1.18: an at-most-once step whose process dies in its first attempt; the retry succeeds.
import { withDurableExecution, createRetryStrategy, JitterStrategy, StepSemantics } from "@aws/durable-execution-sdk-js";

const retry = createRetryStrategy({ maxAttempts: 3, initialDelay: { seconds: 1 }, backoffRate: 1, jitter: JitterStrategy.NONE });

export const handler = withDurableExecution(async (event, context) => {
  const text = event.Input;
  return await context.step(
    async (stepContext) => {
      stepContext.logger.info(`running step for ${text}`);
      if (stepContext.attempt === 1) process.exit(1); // the Lambda process dies during the first attempt
      return "succeeded on second attempt";
    },
    { retryStrategy: retry, semantics: StepSemantics.AtMostOncePerRetry },
  );
});
