// 1.8: a step, then a 2-second wait; the step's result survives the replay.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const result = await context.step(async () => "computed");
  await context.wait({ seconds: 2 });
  return result;
});
