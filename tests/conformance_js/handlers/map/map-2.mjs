// map-2: one of four items fails where one failure is tolerated: three results and the failure's error type.
import { withDurableExecution, retryPresets } from "@aws/durable-execution-sdk-js";

class ValueError extends Error {
  constructor(message) {
    super(message);
    this.name = "ValueError";
  }
}

const check = (value) => {
  if (value === 3) throw new ValueError(`item ${value} is odd one out`);
  return value * value;
};
const square = async (context, value) =>
  await context.step("square", async () => check(value), { retryStrategy: retryPresets.noRetry });

export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { toleratedFailureCount: 1 } };
  const batch = await context.map("squares", [1, 2, 3, 4], square, config);
  // The failed item's error: a ChildContextError whose cause is the step's StepError.
  const errors = batch.getErrors().map((error) => (error ? (error.cause?.name ?? error.name) : null));
  return { results: batch.getResults(), errors, reason: batch.completionReason };
});
