// 1.20: a failed step caught, a fallback value passed to a second step.
import { withDurableExecution, retryPresets } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  let value;
  try {
    value = await context.step(
      async () => {
        throw new Error("this step always fails");
      },
      { retryStrategy: retryPresets.noRetry },
    );
  } catch {
    value = "fallback";
  }
  return await context.step(async () => `${value}_result`);
});
