// invoke-8: invoke inside a child context.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const n = parseInt(event.Input, 10);
  return await context.runInChildContext("doubling", async (child) => await child.invoke("call-double", "invoke-8-double", { n }));
});
