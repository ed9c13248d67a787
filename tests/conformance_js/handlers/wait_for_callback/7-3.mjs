// 7.3: an unnamed wait_for_callback with an inline submitter.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  return await context.waitForCallback(async () => {});
});
