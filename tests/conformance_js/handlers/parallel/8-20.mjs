// 8.20: the batch result's accessors.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";
import { ok, fail, projection, pick } from "../shared/batch.mjs";
export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { toleratedFailureCount: 1 } };
  const batch = await context.parallel("accessors", [ok, fail, ok], config);
  return {
    hasFailure: batch.hasFailure,
    successCount: batch.succeeded().length,
    failureCount: batch.failed().length,
    errorCount: batch.getErrors().filter((error) => error !== undefined && error !== null).length,
  };
});
