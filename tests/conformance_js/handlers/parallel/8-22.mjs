// 8.22: failures exactly at the tolerated percentage.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";
import { ok, fail, projection, pick } from "../shared/batch.mjs";
export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { toleratedFailurePercentage: 25 } };
  return projection(await context.parallel("percentage-equal", [fail, ok, ok, ok], config));
});
