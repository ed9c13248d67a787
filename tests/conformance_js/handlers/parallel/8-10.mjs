// 8.10: the tolerated failure count exceeded.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";
import { ok, fail, projection, pick } from "../shared/batch.mjs";
export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { toleratedFailureCount: 1 } };
  const summary = projection(await context.parallel("tolerated-exceeded", [fail, fail, ok], config));
  return pick(summary, ["completionReason", "successCount", "failureCount", "totalCount"]);
});
