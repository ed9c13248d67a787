// 8.3: named branches.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const branches = [
    { name: "first", func: async () => "one" },
    { name: "second", func: async () => "two" },
  ];
  const batch = await context.parallel("named", branches, { maxConcurrency: 1 });
  return batch.getResults();
});
