// 2.5: a one-hour wait.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  await context.wait({ hours: 1 });
  return "waited an hour";
});
