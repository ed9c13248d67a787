// map-4: two successes of four items are enough: MIN_SUCCESSFUL_REACHED, the last two never start.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

const fetchRegion = async (context, region) => await context.step("fetch", async () => `${region}-ok`);

export const handler = withDurableExecution(async (event, context) => {
  const config = { maxConcurrency: 1, completionConfig: { minSuccessful: 2 } };
  const batch = await context.map("regions", ["eu", "us", "ap", "sa"], fetchRegion, config);
  return { results: batch.getResults(), reason: batch.completionReason };
});
