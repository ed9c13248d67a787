// 8.5: a parallel of no branches.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  return (await context.parallel("empty", [])).getResults();
});
