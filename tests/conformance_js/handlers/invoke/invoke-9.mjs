// invoke-9: a stopped parent stops the child it waits for.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  return await context.invoke("call-waiter", "invoke-9-waiter", { ticket: event.Input });
});
