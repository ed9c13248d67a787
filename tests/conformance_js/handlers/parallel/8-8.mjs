// 8.8: min successful reached before every branch ran.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";
import { ok, fail, projection, pick } from "../shared/batch.mjs";
export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { minSuccessful: 2 } };
  const batch = await context.parallel("min-successful", [ok, ok, ok, ok], config);
  return pick(projection(batch), ["completionReason", "successCount", "totalCount"]);
});
