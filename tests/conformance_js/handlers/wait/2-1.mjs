// 2.1: a 2-second wait.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  await context.wait({ seconds: 2 });
  return "waited";
});
