// 8.13: the tolerated failure percentage exceeded.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";
import { ok, fail, projection, pick } from "../shared/batch.mjs";
export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { toleratedFailurePercentage: 25 } };
  const summary = projection(await context.parallel("percentage-exceeded", [fail, fail, ok, ok], config));
  return pick(summary, ["completionReason", "successCount", "failureCount", "totalCount"]);
});
