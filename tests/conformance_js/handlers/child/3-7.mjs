// 3.7: a child context whose step succeeds on its retry.
import { withDurableExecution, createRetryStrategy, JitterStrategy } from "@aws/durable-execution-sdk-js";

const retry = createRetryStrategy({ maxAttempts: 3, initialDelay: { seconds: 1 }, backoffRate: 1, jitter: JitterStrategy.NONE });

export const handler = withDurableExecution(async (event, context) => {
  const value = event.Input;
  return await context.runInChildContext("retrying_child", 
    async (child) =>
      await child.step(
        async (stepContext) => {
          if (stepContext.attempt === 1) throw new Error("first attempt fails");
          return value;
        },
        { retryStrategy: retry },
      ),
  );
});
