// wfc-3: a condition never met, two attempts allowed: the strategy's error fails the operation and the
// execution.
import { withDurableExecution, createWaitStrategy, JitterStrategy } from "@aws/durable-execution-sdk-js";

const strategy = createWaitStrategy({
  shouldContinuePolling: () => true,
  maxAttempts: 2,
  initialDelay: { seconds: 3 },
  jitter: JitterStrategy.NONE,
});

export const handler = withDurableExecution(async (event, context) => {
  return await context.waitForCondition("never-ready", async (state) => state, {
    waitStrategy: strategy,
    initialState: event.Input,
  });
});
