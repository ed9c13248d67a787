// 7.10: a wait and a step before wait_for_callback.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

// Hands the callback id to the external system (the test harness finds it in the history).
const submit = async () => {};

export const handler = withDurableExecution(async (event, context) => {
  await context.wait({ seconds: 1 });
  await context.step(async () => ({ prepared: true }));
  return await context.waitForCallback(event.Input, submit);
});
