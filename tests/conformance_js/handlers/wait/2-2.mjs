// 2.2: a named wait.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  await context.wait("custom_wait_name", { seconds: 2 });
  return "waited";
});
