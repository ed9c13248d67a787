// 1.12: a step failing every one of its 4 attempts.
import { withDurableExecution, createRetryStrategy, JitterStrategy } from "@aws/durable-execution-sdk-js";

const retry = createRetryStrategy({ maxAttempts: 4, initialDelay: { seconds: 1 }, backoffRate: 1, jitter: JitterStrategy.NONE });

export const handler = withDurableExecution(async (event, context) => {
  return await context.step(
    async (stepContext) => {
      throw new Error(`attempt ${stepContext.attempt} failed`);
    },
    { retryStrategy: retry },
  );
});
