// 3.13: a child context that only waits, then a step in the parent.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const input = event.Input;
  const value = await context.runInChildContext("only_wait", async (child) => {
    await child.wait({ seconds: 1 });
    return input;
  });
  return await context.step(async () => value);
});
