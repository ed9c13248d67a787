// 1.15: a custom retry strategy retrying a transient error.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

class TransientError extends Error {
  constructor(message) {
    super(message);
    this.name = "TransientError";
  }
}

const retryOnTransient = (error, attemptsMade) =>
  error instanceof TransientError && attemptsMade < 3 ? { shouldRetry: true, delay: { seconds: 1 } } : { shouldRetry: false };

export const handler = withDurableExecution(async (event, context) => {
  return await context.step(
    async (stepContext) => {
      if (stepContext.attempt === 1) throw new TransientError("temporary outage");
      return "recovered";
    },
    { retryStrategy: retryOnTransient },
  );
});
