// 1.6: a step with a custom serdes that upper-cases what it stores.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

const upper = (value) => {
  if (typeof value === "string") return value.toUpperCase();
  if (Array.isArray(value)) return value.map(upper);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, upper(v)]));
  return value;
};
const uppercaseSerdes = {
  serialize: async (value) => (value === undefined ? undefined : JSON.stringify(upper(value))),
  deserialize: async (data) => (data === undefined ? undefined : JSON.parse(data)),
};

export const handler = withDurableExecution(async (event, context) => {
  const text = event.Input;
  return await context.step(async () => text, { serdes: uppercaseSerdes });
});
