// 8.7: throwIfError on a failed batch fails the execution.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";
import { ok, fail, projection, pick } from "../shared/batch.mjs";
export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { toleratedFailureCount: 0 } };
  const batch = await context.parallel("throwing", [fail, ok], config);
  batch.throwIfError();
  return batch.getResults();
});
