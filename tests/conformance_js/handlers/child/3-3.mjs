// 3.3: a child context running two steps.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const value = event.Input;
  return await context.runInChildContext("two_steps", async (child) => {
    const first = await child.step(async () => value);
    return await child.step(async () => first);
  });
});
