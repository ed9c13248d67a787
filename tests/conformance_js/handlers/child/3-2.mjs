// 3.2: a named child context.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const { value, name } = event.Input;
  return await context.runInChildContext(name, async (child) => await child.step(async () => value));
});
