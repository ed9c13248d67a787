// 8.17: min successful out of reach.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";
import { ok, fail, projection, pick } from "../shared/batch.mjs";
export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { minSuccessful: 3 } };
  return projection(await context.parallel("min-unreached", [ok, fail, ok], config));
});
