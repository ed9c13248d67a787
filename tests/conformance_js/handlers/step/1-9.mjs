// 1.9: a step's result is replayed, not run again, after a wait.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const result = await context.step(async (stepContext) => {
    stepContext.logger.info("step executed");
    return "cached_value";
  });
  await context.wait({ seconds: 1 });
  return result;
});
