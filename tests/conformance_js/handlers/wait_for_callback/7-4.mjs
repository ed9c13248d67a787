// 7.4: a callback failure, not caught: the execution fails.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

// Hands the callback id to the external system (the test harness finds it in the history).
const submit = async () => {};

export const handler = withDurableExecution(async (event, context) => {
  return await context.waitForCallback(event.Input, submit);
});
