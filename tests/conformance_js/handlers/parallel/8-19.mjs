// 8.19: an invalid maxConcurrency (0), refused before any branch runs.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  return (await context.parallel("invalid", [async () => "a", async () => "b"], { maxConcurrency: 0 })).getResults();
});
