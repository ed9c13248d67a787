// 3.11: a child context whose result is over the checkpoint limit (rebuilt on replay), logging always.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

const largeResult = (value) => async (child) => {
  // Logged in replay too: the re-execution that rebuilds the large result stays visible in the logs.
  child.configureLogger({ modeAware: false });
  child.logger.info(`building a large result for ${value}`);
  const small = await child.step(async () => value);
  return { value: small, padding: small.repeat(40_000) };
};

export const handler = withDurableExecution(async (event, context) => {
  const result = await context.runInChildContext("large_result", largeResult(event.Input));
  await context.wait({ seconds: 1 });
  return result.padding.length;
});
