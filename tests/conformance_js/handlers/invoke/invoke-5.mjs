// invoke-5: invoke with a tenant id.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const { tenant, name } = event.Input;
  return await context.invoke("call-greet", "invoke-5-greet", { name }, { tenantId: tenant });
});
