// 1.7: a step writing with its context's logger.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const name = event.Input;
  return await context.step(async (stepContext) => {
    stepContext.logger.info(`Greeting step started for: ${name}`);
    const greeting = `Hello, ${name}!`;
    stepContext.logger.info(`Greeting step completed with: ${greeting}`);
    return greeting;
  });
});
