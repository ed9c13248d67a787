// 1.2: a step with a custom name.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const name = event.Input;
  return await context.step("custom_step_name", async () => `Hello, ${name}!`);
});
