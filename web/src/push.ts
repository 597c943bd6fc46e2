import { useSyncExternalStore } from 'react';
import type { PushTarget, WebPushSubscription } from '../../src/client/index.ts';
import { api } from './api.ts';
import { navigate } from './router.tsx';

/** Web Push needs a service worker and the Push API; some browsers (and private windows) have neither. */
export function pushSupported(): boolean {
  return 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
}

export class PushPermissionDenied extends Error {}

/**
 * Turns on push in this browser: asks the person, registers the service worker (root scope),
 * subscribes with the server's VAPID key and registers the subscription as a push target.
 */
export async function enablePush(name: string): Promise<PushTarget> {
  if ((await Notification.requestPermission()) !== 'granted') throw new PushPermissionDenied();
  const registration = await navigator.serviceWorker.register('/sw.js', { scope: '/' });
  await navigator.serviceWorker.ready;
  const key = await api.webPushKey();
  const subscription =
    (await registration.pushManager.getSubscription()) ??
    (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64UrlBytes(key) }));
  return api.registerPushTarget({ kind: 'webpush', subscription: subscription.toJSON() as WebPushSubscription, name });
}

function base64UrlBytes(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

export interface ReceivedPush {
  title: string;
  body: string;
  path: string;
  at: number;
}

const RECENT_PUSHES = 10;
let received: ReceivedPush[] = [];
const listeners = new Set<() => void>();

/** Listens to the service worker: pushes it showed are listed, a clicked one opens its page here. */
export function listenToServiceWorker(): void {
  if (!('serviceWorker' in navigator)) return;
  navigator.serviceWorker.addEventListener('message', (event: MessageEvent<{ kind?: string; title?: string; body?: string; path?: string }>) => {
    const { kind, title = '', body = '', path = '/' } = event.data ?? {};
    if (!/^\/(?!\/)/.test(path)) return;
    if (kind === 'open') navigate(path);
    if (kind === 'push') {
      received = [{ title, body, path, at: Date.now() }, ...received].slice(0, RECENT_PUSHES);
      for (const listener of listeners) listener();
    }
  });
}

export function useReceivedPushes(): ReceivedPush[] {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => received,
  );
}
