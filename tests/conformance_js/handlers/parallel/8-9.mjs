// 8.9: one failure tolerated.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";
import { ok, fail, projection, pick } from "../shared/batch.mjs";
export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { toleratedFailureCount: 1 } };
  return projection(await context.parallel("tolerated", [ok, fail, ok], config));
});
