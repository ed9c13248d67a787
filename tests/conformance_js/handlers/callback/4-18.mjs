// 4.18: two callbacks created, then awaited in order.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [nameA, nameB] = event.Input;
  const [a] = await context.createCallback(nameA);
  const [b] = await context.createCallback(nameB);
  const resultA = await a;
  const resultB = await b;
  return { a: resultA, b: resultB };
});
