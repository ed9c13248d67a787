// 4.13: a callback failure caught, then a 2-second wait.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [callback] = await context.createCallback(event.Input);
  let outcome;
  try {
    outcome = await callback;
  } catch (error) {
    outcome = `callback failed: ${error.message}`;
  }
  await context.wait({ seconds: 2 });
  return outcome;
});
