// 1.3: two steps in sequence, the second using the first's result.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const first = await context.step(async () => "first");
  return await context.step(async () => `${first}_second`);
});
