// 4.7: a callback, a step while it is pending, then its result.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [result] = await context.createCallback(event.Input);
  await context.step(async () => "side work");
  return await result;
});
