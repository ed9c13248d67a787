// 3.12: a child context whose step's process dies once StepStarted is durable; the next invocation runs the
// step again and the child context succeeds.
import fs from "node:fs";
import { createHash } from "node:crypto";
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

// The crash happens once per execution; the process dies with it, so the mark is a file (the function's
// folder is this backend's own).
const crashMark = (arn) => `crashed-${createHash("sha256").update(arn).digest("hex").slice(0, 16)}`;

// Whether a step's START is durable: the SDK's own record of the operations (what the Python twin reads as
// context.state); the START of an at-least-once step is checkpointed without being awaited.
const stepStarted = (child) =>
  Object.values(child._executionContext._stepData).some((op) => op.Type === "STEP" && op.Status === "STARTED");

export const handler = withDurableExecution(async (event, context) => {
  const value = event.Input;
  const mark = crashMark(context.executionContext.durableExecutionArn);
  return await context.runInChildContext(async (child) =>
    child.step(async () => {
      if (!fs.existsSync(mark)) {
        fs.writeFileSync(mark, "");
        for (let i = 0; i < 1000 && !stepStarted(child); i++) await new Promise((resolve) => setTimeout(resolve, 5));
        process.exit(1);
      }
      return value;
    }),
  );
});
