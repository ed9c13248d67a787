// 1.5: a step returning nothing.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  return (await context.step(async () => null)) ?? null;
});
