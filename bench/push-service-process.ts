/**
 * The local Web Push service in a process of its own, for the fan-out bench: checking each push's
 * VAPID token and decrypting its payload takes a millisecond or two, which in the bench's process
 * would delay the very reads the bench times. Asked over IPC: `subscribe` (a subscription for the
 * server's VAPID key) and `received` (how many pushes arrived).
 */
import { startWebPushService } from '../test/support/push-providers.ts';

interface Request {
  id: number;
  subscribe?: string;
  received?: true;
}

const service = await startWebPushService();
process.on('message', (request: Request) => {
  if (request.subscribe !== undefined) process.send?.({ id: request.id, subscription: service.subscribe(request.subscribe) });
  else if (request.received) process.send?.({ id: request.id, received: service.received.length });
});
process.on('disconnect', () => void service.close().then(() => process.exit(0)));
process.send?.({ ready: true });
