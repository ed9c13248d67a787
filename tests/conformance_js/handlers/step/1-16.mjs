// 1.16: a custom retry strategy that does not retry a transient error.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

class TransientError extends Error {
  constructor(message) {
    super(message);
    this.name = "TransientError";
  }
}

const noRetryOnTransient = (error) =>
  error instanceof TransientError ? { shouldRetry: false } : { shouldRetry: true, delay: { seconds: 1 } };

export const handler = withDurableExecution(async (event, context) => {
  return await context.step(
    async () => {
      throw new TransientError("temporary outage");
    },
    { retryStrategy: noRetryOnTransient },
  );
});
