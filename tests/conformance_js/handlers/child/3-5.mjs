// 3.5: a failed child context caught, then a step.
import { withDurableExecution, retryPresets } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const value = event.Input;
  try {
    await context.runInChildContext(
      async (child) =>
        await child.step(
          async () => {
            throw new Error("inner step failed");
          },
          { retryStrategy: retryPresets.noRetry },
        ),
    );
  } catch {
    // the child context failed: go on
  }
  return await context.step(async () => value);
});
