// The bench's remote-function workflow (section `remote`), in JavaScript: the twin of steps.py, `steps`
// steps in a row, the first burning `burn_ms` of CPU; deployed as its own function (handler steps.handler).
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

// Busy the CPU for `milliseconds` of this process's CPU time (user and system), the user's own work.
const burn = (milliseconds) => {
  const cpuMs = () => {
    const used = process.cpuUsage();
    return (used.user + used.system) / 1000;
  };
  const end = cpuMs() + milliseconds;
  while (cpuMs() < end) {
    // busy
  }
};

export const handler = withDurableExecution(async (event, context) => {
  const steps = Number(event.steps);
  let total = 0;
  for (let index = 0; index < steps; index += 1) {
    total += await context.step(`step-${index}`, async () => {
      if (index === 0) burn(Number(event.burn_ms ?? 0));
      return index + 1;
    });
  }
  return { steps, total };
});
