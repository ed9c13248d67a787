// 8.16: every branch fails, all tolerated.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";
import { ok, fail, projection, pick } from "../shared/batch.mjs";
export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { toleratedFailureCount: 3 } };
  return projection(await context.parallel("all-fail", [fail, fail, fail], config));
});
