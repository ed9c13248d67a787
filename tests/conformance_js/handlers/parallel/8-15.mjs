// 8.15: an item serdes wrapping each branch result.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

const wrapping = {
  serialize: async (value) => JSON.stringify({ wrapped: value }),
  deserialize: async (data) => (data === undefined ? undefined : JSON.parse(data).wrapped),
};

export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, itemSerdes: wrapping };
  return (await context.parallel("wrapped", [async () => "x", async () => "y"], config)).getResults();
});
