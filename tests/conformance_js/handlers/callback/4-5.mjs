// 4.5: a callback with a 10-second heartbeat timeout, kept alive by heartbeats.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [result] = await context.createCallback(event.Input, { heartbeatTimeout: { seconds: 10 } });
  return await result;
});
