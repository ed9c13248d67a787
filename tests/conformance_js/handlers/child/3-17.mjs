// 3.17: a child context that only logs, then a wait.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const value = event.Input;
  const result = await context.runInChildContext("log_only", async (child) => {
    child.logger.info(`child body ran for ${value}`);
    return value;
  });
  await context.wait({ seconds: 1 });
  return result;
});
