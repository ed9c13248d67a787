// 1.19: a step that always fails, without retries: the execution fails.
import { withDurableExecution, retryPresets } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  return await context.step(
    async () => {
      throw new Error("this step always fails");
    },
    { retryStrategy: retryPresets.noRetry },
  );
});
