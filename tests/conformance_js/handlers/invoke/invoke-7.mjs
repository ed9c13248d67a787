// invoke-7: invoke a plain function that raises.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  try {
    await context.invoke("call-reserve", "invoke-7-reserve", { customer: event.Input });
  } catch (error) {
    return { type: error.cause?.name ?? error.name, message: error.cause?.message ?? error.message };
  }
  throw new Error("the function raises, so the invoke must fail");
});
