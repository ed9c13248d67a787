// wfc-4: a check that raises on its second attempt fails the operation; the handler catches the SDK's
// WaitForConditionError and returns the error it carries.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

class ValueError extends Error {
  constructor(message) {
    super(message);
    this.name = "ValueError";
  }
}

const checkSensor = async (state, check) => {
  if (check.attempt >= 2) throw new ValueError(`sensor ${state} unreachable`);
  return state;
};

export const handler = withDurableExecution(async (event, context) => {
  try {
    await context.waitForCondition("sensor", checkSensor, {
      waitStrategy: () => ({ shouldContinue: true, delay: { seconds: 10 } }),
      initialState: event.Input,
    });
  } catch (error) {
    return { type: error.cause?.name ?? error.name, message: error.cause?.message ?? error.message };
  }
  throw new Error("the check raised on its second attempt, so waitForCondition must fail");
});
