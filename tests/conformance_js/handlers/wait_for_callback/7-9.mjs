// 7.9: two wait_for_callbacks in sequence.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

// Hands the callback id to the external system (the test harness finds it in the history).
const submit = async () => {};

export const handler = withDurableExecution(async (event, context) => {
  await context.waitForCallback("first", submit);
  return await context.waitForCallback("second", submit);
});
