// 2.3: two named waits in sequence.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  await context.wait("wait-1", { seconds: 2 });
  await context.wait("wait-2", { seconds: 2 });
  return { completedWaits: 2 };
});
