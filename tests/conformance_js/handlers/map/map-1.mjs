// map-1: items one at a time, iterations named by itemNamer, results in item order.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

const price = async (context, sku, index) => await context.step("price", async () => `${sku}:${(index + 1) * 10}`);

export const handler = withDurableExecution(async (event, context) => {
  const skus = [0, 1, 2].map((n) => `${event.Input}-${n}`);
  const config = { maxConcurrency: 1, itemNamer: (sku, index) => `sku-${index}` };
  return (await context.map("prices", skus, price, config)).getResults();
});
