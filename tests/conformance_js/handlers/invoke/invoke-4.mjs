// invoke-4: 450 KB through an invoke, both ways.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

export const handler = withDurableExecution(async (event, context) => {
  const blob = "x".repeat(450_000) + event.Input;
  const result = await context.invoke("call-mirror", "invoke-4-mirror", { blob });
  return { size: result.size, tail: result.mirrored.slice(-8), length: result.mirrored.length };
});
