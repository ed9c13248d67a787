// 7.11: a deserializer reading the payload as JSON.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

// Hands the callback id to the external system (the test harness finds it in the history).
const submit = async () => {};

const jsonObject = { deserialize: async (data) => (data === undefined ? undefined : JSON.parse(data)) };

export const handler = withDurableExecution(async (event, context) => {
  const decision = await context.waitForCallback(event.Input, submit, { serdes: jsonObject });
  return decision.status;
});
