// 4.17: two callbacks one after the other.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const [nameA, nameB] = event.Input;
  const [a] = await context.createCallback(nameA);
  const resultA = await a;
  const [b] = await context.createCallback(nameB);
  const resultB = await b;
  return { a: resultA, b: resultB };
});
