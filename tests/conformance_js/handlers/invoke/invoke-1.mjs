// invoke-1: invoke a durable workflow that succeeds (the Python module's invoke-1-echo, in the worker).
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  return await context.invoke("call-echo", "invoke-1-echo", { value: event.Input });
});
