// The push senders this server offers: Web Push always (its VAPID keys are generated when not configured),
// FCM and APNs when their variables are set.
import type { Config } from '../../../config.ts';
import { createApnsSender } from './apns.ts';
import type { ApnsSenderOptions } from './apns.ts';
import { createFcmSender } from './fcm.ts';
import type { FcmSenderOptions } from './fcm.ts';
import type { PushKind, PushSender } from './push-sender.ts';
import { loadVapidKeys, WebPushSender } from './webpush.ts';
import type { WebPushSenderOptions } from './webpush.ts';

export interface PushSenders {
  byKind: ReadonlyMap<PushKind, PushSender>;
  /** The VAPID public key (base64url) the web app passes to PushManager.subscribe as applicationServerKey. */
  vapidPublicKey: string;
  /** Closes the APNs connection; called once at shutdown. */
  close(): Promise<void>;
}

export interface PushSendersOptions {
  webpush?: WebPushSenderOptions;
  fcm?: FcmSenderOptions;
  apns?: ApnsSenderOptions;
}

/** Builds the configured senders; a bad provider variable throws ConfigError (one line) at start. */
export function createPushSenders(config: Config, options: PushSendersOptions = {}): PushSenders {
  const webPush = new WebPushSender(loadVapidKeys(config.push.vapid, config.dataDir), options.webpush);
  const fcm = createFcmSender(config.push.fcm, options.fcm);
  const apns = createApnsSender(config.push.apns, options.apns);
  const byKind = new Map<PushKind, PushSender>([[webPush.kind, webPush]]);
  if (fcm) byKind.set(fcm.kind, fcm);
  if (apns) byKind.set(apns.kind, apns);
  return { byKind, vapidPublicKey: webPush.publicKey, close: async () => apns?.close() };
}
