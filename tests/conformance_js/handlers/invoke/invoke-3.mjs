// invoke-3: invoke a durable workflow that times out (60 s) while it waits an hour.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  try {
    await context.invoke("call-slow", "invoke-3-slow", { job: event.Input });
  } catch (error) {
    return error.cause?.name ?? error.name;
  }
  throw new Error("the child times out, so the invoke must raise");
});
