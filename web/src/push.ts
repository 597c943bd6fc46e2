import { useSyncExternalStore } from 'react';
import type { PushTarget, WebPushSubscription } from '../../src/client/index.ts';
import { api, errorCode } from './api.ts';
import { navigate } from './router.tsx';

/** Web Push needs a service worker and the Push API; some browsers (and private windows) have neither. */
export function pushSupported(): boolean {
  return 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
}

export class PushPermissionDenied extends Error {}

/** Where this browser keeps the id of the push target it registered, to find itself in the list of targets. */
const OWN_TARGET_KEY = 'trackstack.pushTarget';

/** The id of the push target this browser registered, if it did. */
export function ownPushTarget(): number | undefined {
  const id = Number(localStorage.getItem(OWN_TARGET_KEY));
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}

/** This browser's push subscription, when it has one it may use: null when it has none or may not show notifications. */
export async function browserPushSubscription(): Promise<PushSubscription | null> {
  if (!pushSupported() || Notification.permission !== 'granted') return null;
  const registration = await navigator.serviceWorker.getRegistration('/');
  return (await registration?.pushManager.getSubscription()) ?? null;
}

/**
 * Turns on push in this browser: asks the person, registers the service worker (root scope),
 * subscribes with the server's VAPID key and registers the subscription as a push target (the same
 * subscription registered again answers its existing target).
 */
export async function enablePush(name: string): Promise<PushTarget> {
  if ((await Notification.requestPermission()) !== 'granted') throw new PushPermissionDenied();
  const registration = await navigator.serviceWorker.register('/sw.js', { scope: '/' });
  await navigator.serviceWorker.ready;
  const key = await api.webPushKey();
  const subscription =
    (await registration.pushManager.getSubscription()) ??
    (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64UrlBytes(key) }));
  const target = await api.registerPushTarget({ kind: 'webpush', subscription: subscription.toJSON() as WebPushSubscription, name });
  localStorage.setItem(OWN_TARGET_KEY, String(target.id));
  return target;
}

/** Turns push off in this browser: drops its subscription, then its push target (already gone: nothing to do). */
export async function disablePush(): Promise<void> {
  await (await browserPushSubscription())?.unsubscribe();
  const id = ownPushTarget();
  if (id !== undefined) {
    await api.deletePushTarget(id).catch((error: unknown) => {
      if (errorCode(error) !== 'NOT_FOUND') throw error;
    });
  }
  localStorage.removeItem(OWN_TARGET_KEY);
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
