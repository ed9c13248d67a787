// 4.6: a callback answered with a failure, not caught: the execution fails.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [result] = await context.createCallback(event.Input);
  return await result;
});
