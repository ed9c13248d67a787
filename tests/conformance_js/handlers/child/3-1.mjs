// 3.1: a child context running one step.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const value = event.Input;
  return await context.runInChildContext(async (child) => await child.step(async () => value));
});
