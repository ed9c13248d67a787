// 4.12: a callback result, then a 2-second wait.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [callback] = await context.createCallback(event.Input);
  const result = await callback;
  await context.wait({ seconds: 2 });
  return result;
});
