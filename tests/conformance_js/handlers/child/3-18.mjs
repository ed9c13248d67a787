// 3.18: a child context with a step and a wait, then a step and a wait in the parent.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const input = event.Input;
  const value = await context.runInChildContext("step_then_wait", async (child) => {
    const result = await child.step(async () => input);
    await child.wait({ seconds: 1 });
    return result;
  });
  const result = await context.step(async () => value);
  await context.wait({ seconds: 1 });
  return result;
});
