// 4.19: two callbacks created, then awaited in reverse order.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [nameA, nameB] = event.Input;
  const [a] = await context.createCallback(nameA);
  const [b] = await context.createCallback(nameB);
  const resultB = await b;
  const resultA = await a;
  return { a: resultA, b: resultB };
});
