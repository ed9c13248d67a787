// 4.14: a callback timeout (3 s) caught, then a 2-second wait.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [callback] = await context.createCallback(event.Input, { timeout: { seconds: 3 } });
  let outcome;
  try {
    outcome = await callback;
  } catch (error) {
    outcome = `callback timed out: ${error.message}`;
  }
  await context.wait({ seconds: 2 });
  return outcome;
});
