// 1.1: a single step returning a greeting.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const name = event.Input;
  return await context.step(async () => `Hello, ${name}!`);
});
