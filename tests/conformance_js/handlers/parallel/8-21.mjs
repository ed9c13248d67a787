// 8.21: a parallel inside a parallel branch.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

const inner = async (ctx) => {
  const branches = [async (c) => await c.step(async () => "i1"), async (c) => await c.step(async () => "i2")];
  return (await ctx.parallel("inner", branches, { maxConcurrency: 1 })).getResults();
};

export const handler = withDurableExecution(async (event, context) => {
  return (await context.parallel("outer", [inner], { maxConcurrency: 1 })).getResults();
});
