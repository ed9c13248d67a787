// 4.3: a callback with a 5-second timeout that nobody answers.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [result] = await context.createCallback(event.Input, { timeout: { seconds: 5 } });
  return await result;
});
