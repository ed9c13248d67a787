// invoke-6: invoke a plain function.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  return await context.invoke("call-add", "invoke-6-add", { a: 2, b: 3, label: event.Input });
});
