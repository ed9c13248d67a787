// 1.14: exponential backoff (2 s, rate 3, at most 60 s): a step succeeding on its third attempt.
import { withDurableExecution, createRetryStrategy, JitterStrategy } from "@aws/durable-execution-sdk-js";

const retry = createRetryStrategy({
  maxAttempts: 5,
  initialDelay: { seconds: 2 },
  maxDelay: { seconds: 60 },
  backoffRate: 3,
  jitter: JitterStrategy.NONE,
});

export const handler = withDurableExecution(async (event, context) => {
  return await context.step(
    async (stepContext) => {
      if (stepContext.attempt < 3) throw new Error(`attempt ${stepContext.attempt} fails`);
      return "succeeded on third attempt";
    },
    { retryStrategy: retry },
  );
});
