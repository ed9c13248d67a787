// 3.15: a child context body that throws directly.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

class ValueError extends Error {
  constructor(message) {
    super(message);
    this.name = "ValueError";
  }
}

export const handler = withDurableExecution(async (event, context) => {
  return await context.runInChildContext("throws", async () => {
    throw new ValueError("thrown directly in the child body");
  });
});
