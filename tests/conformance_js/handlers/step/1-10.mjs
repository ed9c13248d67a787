// 1.10: a failing step without retries, caught; a wait; the caught message returned.
import { withDurableExecution, retryPresets } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  let outcome;
  try {
    await context.step(
      async (stepContext) => {
        stepContext.logger.info("step executed");
        throw new Error("permanent failure");
      },
      { retryStrategy: retryPresets.noRetry },
    );
    outcome = "unexpected success";
  } catch (error) {
    outcome = `caught: ${error.message}`;
  }
  await context.wait({ seconds: 1 });
  return outcome;
});
