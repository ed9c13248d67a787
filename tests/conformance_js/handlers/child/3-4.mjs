// 3.4: a child context whose step fails without retries: the execution fails.
import { withDurableExecution, retryPresets } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  return await context.runInChildContext("failing_child", 
    async (child) =>
      await child.step(
        async () => {
          throw new Error("inner step failed");
        },
        { retryStrategy: retryPresets.noRetry },
      ),
  );
});
