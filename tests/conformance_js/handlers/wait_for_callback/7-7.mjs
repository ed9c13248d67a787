// 7.7: a submitter that always fails, retried once after 1 s: the execution fails.
import { withDurableExecution, createRetryStrategy, JitterStrategy } from "@aws/durable-execution-sdk-js";

const retry = createRetryStrategy({ maxAttempts: 2, initialDelay: { seconds: 1 }, backoffRate: 1, jitter: JitterStrategy.NONE });

class ConnectionError extends Error {
  constructor(message) {
    super(message);
    this.name = "ConnectionError";
  }
}

const failingSubmit = async () => {
  throw new ConnectionError("the external system is unreachable");
};

export const handler = withDurableExecution(async (event, context) => {
  return await context.waitForCallback(event.Input, failingSubmit, { retryStrategy: retry });
});
