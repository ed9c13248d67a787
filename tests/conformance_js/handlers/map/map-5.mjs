// map-5: item results checkpointed by itemSerdes as "n=<value>"; the handler sees the numbers back.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

const numberText = {
  serialize: async (value) => (value === undefined ? undefined : `n=${value}`),
  deserialize: async (data) => (data === undefined ? undefined : parseInt(data.replace(/^n=/, ""), 10)),
};

export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, itemSerdes: numberText };
  return (await context.map("triples", [parseInt(event.Input, 10), 5], async (ctx, value) => value * 3, config)).getResults();
});
