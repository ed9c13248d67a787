// 8.18: min successful and a tolerated failure count together.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";
import { ok, fail, projection, pick } from "../shared/batch.mjs";
export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { minSuccessful: 3, toleratedFailureCount: 1 } };
  const summary = projection(await context.parallel("both-limits", [fail, fail, ok, ok], config));
  return pick(summary, ["completionReason", "successCount", "failureCount", "totalCount"]);
});
