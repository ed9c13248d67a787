// 4.4: a callback with a 5-second heartbeat timeout.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [result] = await context.createCallback(event.Input, { heartbeatTimeout: { seconds: 5 } });
  return await result;
});
