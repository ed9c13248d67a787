// 2.4: a one-minute wait.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  await context.wait({ minutes: 1 });
  return "waited a minute";
});
