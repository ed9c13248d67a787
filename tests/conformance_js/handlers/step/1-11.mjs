// 1.11: a step failing its first attempt, retried after 1 s, succeeding.
import { withDurableExecution, createRetryStrategy, JitterStrategy } from "@aws/durable-execution-sdk-js";

const retry = createRetryStrategy({ maxAttempts: 3, initialDelay: { seconds: 1 }, backoffRate: 1, jitter: JitterStrategy.NONE });

export const handler = withDurableExecution(async (event, context) => {
  return await context.step(
    async (stepContext) => {
      if (stepContext.attempt < 2) throw new Error("first attempt fails");
      return "Operation succeeded";
    },
    { retryStrategy: retry },
  );
});
