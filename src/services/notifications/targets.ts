import type { NotificationsConfig } from './settings.ts';
import { limitReached } from '../../platform/http/errors.ts';
import type { AddressGuard } from './channels/addresses.ts';
import { AppError } from './errors.ts';
import type { NotificationsRepository, TargetRow } from './repository.ts';
import type { Channel, TargetRequest, TargetView } from './schemas.ts';

const APNS_TOKEN = /^[0-9a-fA-F]{64,200}$/;

function base64UrlBytes(text: string): number {
  return /^[A-Za-z0-9_-]+={0,2}$/.test(text) ? Buffer.from(text, 'base64url').length : -1;
}

export function toTargetView(row: TargetRow): TargetView {
  const hint = row.subscription === null ? `…${row.address.slice(-6)}` : new URL(row.address).host;
  return { id: Number(row.id), kind: row.kind, name: row.name, hint, createdAt: new Date(Number(row.created_at)).toISOString() };
}

/** Push targets: a user's phones (FCM, APNs tokens) and browsers (Web Push subscriptions). */
export class TargetService {
  readonly #repository: NotificationsRepository;
  readonly #config: NotificationsConfig;
  readonly #guard: AddressGuard;
  readonly #channels: () => readonly Channel[];
  readonly #webPushKey: string | undefined;

  /** `webPushKey` is the VAPID public key of this process's Web Push sender, undefined without one. */
  constructor(repository: NotificationsRepository, config: NotificationsConfig, guard: AddressGuard, channels: () => readonly Channel[], webPushKey?: string) {
    this.#repository = repository;
    this.#config = config;
    this.#guard = guard;
    this.#channels = channels;
    this.#webPushKey = webPushKey;
  }

  /** The key a browser subscribes with (PushManager.subscribe's applicationServerKey). */
  webPushKey(): string {
    if (!this.#webPushKey) throw new AppError('CHANNEL_NOT_AVAILABLE', 'This server has no Web Push sender');
    return this.#webPushKey;
  }

  async list(userId: number): Promise<TargetView[]> {
    return (await this.#repository.listTargets(userId)).map(toTargetView);
  }

  /**
   * Registers a target; the same token or endpoint registered again answers the existing target
   * (`created` false). A token or endpoint belongs to the last account that registered it: a phone or
   * a browser signed into another account must stop receiving the first account's notifications.
   * It is taken only once the caller may hold it: a refused request changes nothing.
   */
  async register(userId: number, request: TargetRequest): Promise<{ target: TargetView; created: boolean }> {
    if (!this.#channels().includes(request.kind)) throw new AppError('CHANNEL_NOT_AVAILABLE', `This server has no ${request.kind} channel configured`);
    const { address, subscription } = await this.#addressOf(request);
    const max = this.#config.targetsPerUser;
    const { row, created } = await this.#repository.registerTarget(
      { user_id: userId, kind: request.kind, address, subscription, name: request.name ?? null, created_at: Date.now() },
      (usage) => {
        if (usage + 1 > max) throw limitReached('pushTargets', max, usage, `At most ${max} push targets per user`);
      },
    );
    return { target: toTargetView(row), created };
  }

  async delete(userId: number, id: number): Promise<void> {
    if (!(await this.#repository.deleteTarget(userId, id))) throw new AppError('NOT_FOUND', 'No such push target');
  }

  async #addressOf(request: TargetRequest): Promise<{ address: string; subscription: string | null }> {
    if (request.kind === 'webpush') {
      const { subscription } = request;
      if (!subscription || request.token !== undefined) throw new AppError('INVALID_PUSH_TARGET', 'A webpush target is a subscription {endpoint, keys}, without token');
      // The push service is called at this URL: the same rules as a webhook's.
      const verdict = await this.#guard.vet(subscription.endpoint);
      if (!verdict.ok) throw new AppError('INVALID_PUSH_TARGET', `subscription.endpoint: ${verdict.reason}`);
      if (verdict.url.protocol !== 'https:' && !this.#config.allowPrivateUrls) throw new AppError('INVALID_PUSH_TARGET', 'subscription.endpoint must be https');
      if (base64UrlBytes(subscription.keys.p256dh) !== 65) throw new AppError('INVALID_PUSH_TARGET', 'subscription.keys.p256dh must be an uncompressed P-256 key (65 bytes, base64url)');
      if (base64UrlBytes(subscription.keys.auth) !== 16) throw new AppError('INVALID_PUSH_TARGET', 'subscription.keys.auth must be 16 bytes (base64url)');
      return { address: subscription.endpoint, subscription: JSON.stringify({ endpoint: subscription.endpoint, keys: subscription.keys }) };
    }
    if (request.token === undefined || request.subscription !== undefined) throw new AppError('INVALID_PUSH_TARGET', `A ${request.kind} target is a token, without subscription`);
    if (request.kind === 'apns' && !APNS_TOKEN.test(request.token)) throw new AppError('INVALID_PUSH_TARGET', 'An APNs device token is hexadecimal (64 digits or more)');
    return { address: request.token, subscription: null };
  }
}
