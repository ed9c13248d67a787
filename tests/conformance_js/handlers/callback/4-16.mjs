// 4.16: a callback with a number deserializer.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const serdes = { deserialize: async (data) => parseInt(data, 10) };
  const [result] = await context.createCallback(event.Input, { serdes });
  const count = await result;
  return { count, doubled: count * 2 };
});
