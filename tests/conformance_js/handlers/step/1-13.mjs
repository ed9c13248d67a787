// 1.13: the default retry strategy: a step succeeding on its third attempt.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  return await context.step(async (stepContext) => {
    if (stepContext.attempt < 3) throw new Error(`attempt ${stepContext.attempt} fails`);
    return "succeeded on third attempt";
  });
});
