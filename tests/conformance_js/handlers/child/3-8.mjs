// 3.8: a child context whose step exhausts its 2 attempts.
import { withDurableExecution, createRetryStrategy, JitterStrategy } from "@aws/durable-execution-sdk-js";

const retry = createRetryStrategy({ maxAttempts: 2, initialDelay: { seconds: 1 }, backoffRate: 1, jitter: JitterStrategy.NONE });

export const handler = withDurableExecution(async (event, context) => {
  return await context.runInChildContext("exhausted_child", 
    async (child) =>
      await child.step(
        async (stepContext) => {
          throw new Error(`attempt ${stepContext.attempt} failed`);
        },
        { retryStrategy: retry },
      ),
  );
});
