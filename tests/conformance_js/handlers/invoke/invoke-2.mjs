// invoke-2: invoke a durable workflow that fails; the InvokeError caught carries the child's error.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  try {
    await context.invoke("call-reject", "invoke-2-reject", { order: event.Input });
  } catch (error) {
    return { type: error.cause?.name ?? error.name, message: error.cause?.message ?? error.message };
  }
  throw new Error("the child fails, so the invoke must raise");
});
