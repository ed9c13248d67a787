// 8.1: two branches of one step each, one at a time.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const batch = await context.parallel(
    "parallel",
    [async (ctx) => await ctx.step(async () => "task-1"), async (ctx) => await ctx.step(async () => "task-2")],
    { maxConcurrency: 1 },
  );
  return batch.getResults();
});
