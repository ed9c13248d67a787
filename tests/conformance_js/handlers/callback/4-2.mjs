// 4.2: a callback named "approval".
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [result] = await context.createCallback("approval");
  return await result;
});
