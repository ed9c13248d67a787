// 8.4: branches returning values of different types.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const branches = [async () => "hello", async () => 42, async () => ({ k: "v" })];
  return (await context.parallel("hetero", branches, { maxConcurrency: 1 })).getResults();
});
