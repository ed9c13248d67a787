// 7.8: wait_for_callback inside a child context named "wrapper".
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

// Hands the callback id to the external system (the test harness finds it in the history).
const submit = async () => {};

export const handler = withDurableExecution(async (event, context) => {
  const name = event.Input;
  return await context.runInChildContext("wrapper", async (child) => await child.waitForCallback(name, submit));
});
