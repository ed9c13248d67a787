// 8.12: flat nesting: the branches' operations belong to the parallel itself.
import { withDurableExecution, NestingType } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const branches = [async (ctx) => await ctx.step(async () => "fa"), async (ctx) => await ctx.step(async () => "fb")];
  const config = { maxConcurrency: 1, nesting: NestingType.FLAT };
  return (await context.parallel("flat", branches, config)).getResults();
});
