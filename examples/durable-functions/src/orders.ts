// The team's own durable function: an order is reserved, waits for the payment service's answer (a
// callback), is packed an hour later and shipped. A declined payment releases the stock and fails the
// execution with the handler's own error. Written with AWS's durable execution SDK exactly as for AWS: only
// the function's AWS_ENDPOINT_URL_LAMBDA (main.tf) points its checkpoints at Stepwell.
import { DurableContext, withDurableExecution } from "@aws/durable-execution-sdk-js";

export interface Order {
  orderId: string;
  items: string[];
}

export interface Payment {
  paymentId: string;
}

export interface Shipped {
  orderId: string;
  reservationId: string;
  paymentId: string;
  trackingId: string;
}

// The handler's failure: its name and message are the execution's error (ErrorType, ErrorMessage).
export class PaymentDeclined extends Error {
  constructor(orderId: string, reason: string) {
    super(`payment for order ${orderId} was declined: ${reason}`);
    this.name = "PaymentDeclined";
  }
}

function validOrder(event: unknown): Order {
  const order = event as Partial<Order> | null;
  if (!order || typeof order.orderId !== "string" || !Array.isArray(order.items) || order.items.length === 0) {
    throw new TypeError(`an order needs an orderId and at least one item, got ${JSON.stringify(event)}`);
  }
  return { orderId: order.orderId, items: order.items.map(String) };
}

export const handler = withDurableExecution(async (event: unknown, context: DurableContext): Promise<Shipped> => {
  const order = validOrder(event);
  const reservationId = await context.step("reserve-stock", async () => `rsv-${order.orderId}-${order.items.length}`);

  // The payment service answers with SendDurableExecutionCallbackSuccess or ...Failure (the test plays it).
  const [payment, callbackId] = await context.createCallback<string>("payment", { timeout: { days: 1 } });
  context.logger.info("waiting for the payment service", { callbackId });
  let paymentId: string;
  try {
    paymentId = (JSON.parse(await payment) as Payment).paymentId;
  } catch (error) {
    await context.step("release-stock", async () => reservationId);
    throw new PaymentDeclined(order.orderId, error instanceof Error ? error.message : String(error));
  }

  await context.wait("packing", { hours: 1 });
  const trackingId = await context.step("ship", async () => `trk-${order.orderId}-${paymentId}`);
  return { orderId: order.orderId, reservationId, paymentId, trackingId };
});
