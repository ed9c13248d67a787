// 4.15: a callback with a deserializer reading a typed message (ISO time to epoch seconds).
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const serdes = {
    deserialize: async (data) => {
      const raw = JSON.parse(data);
      return { id: raw.id, message: raw.message, timestamp: Math.floor(Date.parse(raw.timestamp) / 1000) };
    },
  };
  const [result] = await context.createCallback(event.Input, { serdes });
  return { received: await result };
});
