// 4.10: a callback, a 5-second wait, then its result.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [result] = await context.createCallback(event.Input);
  await context.wait({ seconds: 5 });
  return await result;
});
