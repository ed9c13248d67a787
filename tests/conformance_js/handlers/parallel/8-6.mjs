// 8.6: no failure tolerated: the batch stops at the first failure.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";
import { ok, fail, projection, pick } from "../shared/batch.mjs";
export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { toleratedFailureCount: 0 } };
  return projection(await context.parallel("failfast", [ok, fail, ok], config));
});
