// 8.14: a branch that waits suspends the parallel.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const branches = [
    async (ctx) => await ctx.step(async () => "b0"),
    async (ctx) => {
      await ctx.wait({ seconds: 2 });
      return "b1";
    },
  ];
  return (await context.parallel("suspending", branches, { maxConcurrency: 1 })).getResults();
});
