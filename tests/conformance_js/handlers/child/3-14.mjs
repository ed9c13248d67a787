// 3.14: a child context with a serdes storing plain uppercase text.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

const uppercaseText = {
  serialize: async (value) => (value === undefined ? undefined : String(value).toUpperCase()),
  deserialize: async (data) => data,
};

export const handler = withDurableExecution(async (event, context) => {
  const value = event.Input;
  return await context.runInChildContext("echo", async (child) => await child.step(async () => value), { serdes: uppercaseText });
});
