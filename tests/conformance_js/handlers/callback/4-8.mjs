// 4.8: a callback with a 5-second timeout, a step while it is pending, then its result.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [result] = await context.createCallback(event.Input, { timeout: { seconds: 5 } });
  await context.step(async () => "side work");
  return await result;
});
