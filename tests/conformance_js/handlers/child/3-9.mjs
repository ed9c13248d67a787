// 3.9: a child context, then a wait in the parent.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const value = event.Input;
  const result = await context.runInChildContext(async (child) => await child.step(async () => value));
  await context.wait({ seconds: 1 });
  return result;
});
