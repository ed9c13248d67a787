// wfc-2: the SDK's wait strategy without jitter, 2 s doubling (2, 4, 8), until the counter reaches 4.
import { withDurableExecution, createWaitStrategy, JitterStrategy } from "@aws/durable-execution-sdk-js";

const strategy = createWaitStrategy({
  shouldContinuePolling: (state) => state < 4,
  maxAttempts: 10,
  initialDelay: { seconds: 2 },
  maxDelay: { seconds: 60 },
  backoffRate: 2,
  jitter: JitterStrategy.NONE,
});

export const handler = withDurableExecution(async (event, context) => {
  return await context.waitForCondition("count-to-four", async (state) => state + 1, {
    waitStrategy: strategy,
    initialState: 0,
  });
});
