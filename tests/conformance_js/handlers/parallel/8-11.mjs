// 8.11: three branches, two at a time.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const branches = [async () => "r0", async () => "r1", async () => "r2"];
  return (await context.parallel("concurrent", branches, { maxConcurrency: 2 })).getResults();
});
