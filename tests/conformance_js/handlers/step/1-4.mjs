// 1.4: a step returning a structured value.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const user = event.Input;
  return await context.step(async () => ({ user: { name: user.name, tags: [...user.tags] }, count: user.tags.length }));
});
