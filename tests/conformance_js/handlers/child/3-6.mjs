// 3.6: nested child contexts.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

const inner = (value) => async (child) => await child.step(async () => value);
const outer = (value) => async (child) => {
  await child.step(async () => value);
  return await child.runInChildContext("inner", inner(value));
};

export const handler = withDurableExecution(async (event, context) => {
  return await context.runInChildContext("outer", outer(event.Input));
});
