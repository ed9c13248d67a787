// wfc-1: polls carrying their state ([token, polls]) every 5 s, stopping at the third poll.
import { withDurableExecution } from "@aws/durable-execution-sdk-js";

const poll = async ([token, polls]) => [token, polls + 1];
const everyFiveSecondsUntilThreePolls = (state) =>
  state[1] >= 3 ? { shouldContinue: false } : { shouldContinue: true, delay: { seconds: 5 } };

export const handler = withDurableExecution(async (event, context) => {
  return await context.waitForCondition("poll-until-three", poll, {
    waitStrategy: everyFiveSecondsUntilThreePolls,
    initialState: [event.Input, 0],
  });
});
