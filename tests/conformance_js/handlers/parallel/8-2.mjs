// 8.2: an unnamed parallel of two branches.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const batch = await context.parallel([async () => "alpha", async () => "beta"], { maxConcurrency: 1 });
  return batch.getResults();
});
