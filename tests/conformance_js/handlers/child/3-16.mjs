// 3.16: a child context returning nothing.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  return (await context.runInChildContext("nothing", async () => null)) ?? null;
});
