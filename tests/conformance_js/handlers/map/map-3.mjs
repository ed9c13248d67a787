// map-3: two of four items fail where 25 % are tolerated: FAILURE_TOLERANCE_EXCEEDED after the second
// failure, the items after it never start.
import { withDurableExecution, retryPresets } from "@aws/durable-execution-sdk-js";

// The Python handler's exception class, by name (the error's name is its ErrorType).
class RuntimeError extends Error {
  constructor(message) {
    super(message);
    this.name = "RuntimeError";
  }
}

const check = (value) => {
  if (value <= 2) throw new RuntimeError(`item ${value} failed`);
  return value;
};
const work = async (context, value) =>
  await context.step("work", async () => check(value), { retryStrategy: retryPresets.noRetry });

export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { toleratedFailurePercentage: 25 } };
  const batch = await context.map("work-items", [1, 2, 3, 4], work, config);
  return { succeeded: batch.successCount, failed: batch.failureCount, reason: batch.completionReason };
});
