// 4.11: a callback timing out (3 s) during a 6-second wait.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [result] = await context.createCallback(event.Input, { timeout: { seconds: 3 } });
  await context.wait({ seconds: 6 });
  return await result;
});
