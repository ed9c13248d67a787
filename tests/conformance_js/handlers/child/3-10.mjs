// 3.10: a child context with a step and a wait.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

const stepThenWait = (value) => async (child) => {
  const result = await child.step(async () => value);
  await child.wait({ seconds: 1 });
  return result;
};

export const handler = withDurableExecution(async (event, context) => {
  return await context.runInChildContext("step_then_wait", stepThenWait(event.Input));
});
