import { randomBytes } from 'node:crypto';
import type { NotificationsConfig } from './settings.ts';
import { refusal } from '../../platform/access-policy.ts';
import { limitReached } from '../../platform/http/errors.ts';
import type { Entitlement } from '../billing/entitlement.ts';
import type { DeviceAccessApi } from '../devices/access.ts';
import type { AddressGuard } from './channels/addresses.ts';
import { AppError } from './errors.ts';
import type { NotificationsRepository, RuleFields, RuleWithDevices } from './repository.ts';
import type { Channel, RuleRequest, RuleView } from './schemas.ts';

const ALARMS = /^\s*[A-Za-z][A-Za-z0-9]{0,63}\s*(,\s*[A-Za-z][A-Za-z0-9]{0,63}\s*)*$/;
const MAX_WEBHOOK_URL = 2048;

export function toRuleView(row: RuleWithDevices, webhookSecret?: string): RuleView {
  return {
    id: Number(row.id),
    type: row.type,
    always: row.always === 1,
    deviceIds: row.deviceIds,
    channels: JSON.parse(row.channels) as string[],
    attributes: JSON.parse(row.attributes) as Record<string, unknown>,
    calendarId: row.calendar_id === null ? null : Number(row.calendar_id),
    createdAt: new Date(Number(row.created_at)).toISOString(),
    ...(webhookSecret === undefined ? {} : { webhookSecret }),
  };
}

/** The alarm names a rule narrows to, or undefined for every alarm. */
export function alarmsOf(attributes: Record<string, unknown>): Set<string> | undefined {
  const alarms = attributes.alarms;
  if (typeof alarms !== 'string' || alarms.trim() === '') return undefined;
  return new Set(alarms.split(',').map((name) => name.trim()));
}

export interface RuleServiceOptions {
  repository: NotificationsRepository;
  devices: DeviceAccessApi;
  /** The channels this server can deliver on now. */
  channels: () => readonly Channel[];
  /** Vets webhook URLs as the sender will (NOTIFY_ALLOW_PRIVATE_URLS). */
  guard: AddressGuard;
  config: NotificationsConfig;
  /** Billing's plans (rule limit, channels); undefined when billing is not reachable: no plan applies. */
  plans: Entitlement | undefined;
  /** Told after every change of a rule. */
  changed: () => void;
}

/** Notification rules: each belongs to its creator; other users' rules are 404. */
export class RuleService {
  readonly #options: RuleServiceOptions;

  constructor(options: RuleServiceOptions) {
    this.#options = options;
  }

  async list(userId: number): Promise<RuleView[]> {
    return (await this.#options.repository.listRules(userId)).map((row) => toRuleView(row));
  }

  async get(userId: number, id: number): Promise<RuleView> {
    return toRuleView(await this.#existing(userId, id));
  }

  async create(userId: number, scope: object, request: RuleRequest): Promise<RuleView> {
    const fields = await this.#validate(userId, scope, request);
    await this.#assertChannelsInPlan(userId, fields.channels);
    const max = this.#options.config.rulesPerUser;
    const plan = await this.#options.plans?.limitOf(userId, 'notificationRules');
    const secret = fields.channels.includes('webhook') ? newWebhookSecret() : null;
    // The server's cap and the plan's limit, checked against the count the insert adds to.
    const row = await this.#options.repository.insertRule(userId, fields, secret, Date.now(), (usage) => {
      if (usage + 1 > max) throw limitReached('notificationRules', max, usage, `At most ${max} notification rules per user`);
      plan?.assert(usage);
    });
    this.#options.changed();
    return toRuleView(row, secret ?? undefined);
  }

  /** Replaces the rule; a rule given the webhook channel for the first time gets its secret, shown in this answer only. */
  async update(userId: number, scope: object, id: number, request: RuleRequest): Promise<RuleView> {
    const existing = await this.#existing(userId, id);
    const fields = await this.#validate(userId, scope, request);
    await this.#assertChannelsInPlan(userId, fields.channels);
    const created = fields.channels.includes('webhook') && existing.webhook_secret === null ? newWebhookSecret() : undefined;
    const row = await this.#options.repository.updateRule(userId, id, fields, created ?? existing.webhook_secret, Date.now());
    if (!row) throw new AppError('NOT_FOUND', 'No such notification rule');
    this.#options.changed();
    return toRuleView(row, created);
  }

  async delete(userId: number, id: number): Promise<void> {
    if (!(await this.#options.repository.deleteRule(userId, id))) throw new AppError('NOT_FOUND', 'No such notification rule');
    this.#options.changed();
  }

  async #existing(userId: number, id: number): Promise<RuleWithDevices> {
    const row = await this.#options.repository.findRule(userId, id);
    if (!row) throw new AppError('NOT_FOUND', 'No such notification rule');
    return row;
  }

  async #assertChannelsInPlan(userId: number, channels: readonly string[]): Promise<void> {
    for (const channel of channels) await this.#options.plans?.assertFeature(userId, { channel });
  }

  async #validate(userId: number, scope: object, request: RuleRequest): Promise<RuleFields> {
    const available = this.#options.channels();
    for (const channel of request.channels) {
      if (!available.includes(channel)) throw new AppError('CHANNEL_NOT_AVAILABLE', `This server has no ${channel} channel configured`);
    }
    const attributes = request.attributes ?? {};
    const { alarms, webhookUrl } = attributes;
    if (alarms !== undefined && (typeof alarms !== 'string' || (alarms.trim() !== '' && !ALARMS.test(alarms)) || alarms.length > 1024)) {
      throw new AppError('INVALID_ALARMS');
    }
    if (webhookUrl !== undefined || request.channels.includes('webhook')) {
      if (webhookUrl === undefined) throw new AppError('WEBHOOK_URL_REQUIRED');
      if (typeof webhookUrl !== 'string' || webhookUrl.length > MAX_WEBHOOK_URL) throw new AppError('INVALID_WEBHOOK_URL', `webhookUrl must be a URL of at most ${MAX_WEBHOOK_URL} characters`);
      const verdict = await this.#options.guard.vet(webhookUrl);
      if (!verdict.ok) throw new AppError('INVALID_WEBHOOK_URL', `webhookUrl: ${verdict.reason}`);
    }
    // The spec has no calendar resource, so no id can name one: refused rather than stored and ignored (docs/notifications.md).
    if (request.calendarId !== undefined && request.calendarId !== null) throw new AppError('UNKNOWN_CALENDAR', `No calendar has id ${request.calendarId}: this server has no calendars`);
    const always = request.always ?? false;
    const deviceIds = request.deviceIds ?? [];
    if (always && deviceIds.length > 0) {
      throw new AppError('VALIDATION_FAILED', 'deviceIds must be left out when always is true', { details: [{ path: '/body/deviceIds', message: 'must be left out when always is true' }] });
    }
    if (!always) {
      if (deviceIds.length === 0) throw new AppError('DEVICES_REQUIRED');
      const { devices } = this.#options;
      const access = await devices.accessFor(userId, scope);
      // One lookup for all the devices the user holds nothing on, and only for an administrator, who may name any device.
      const unheld = deviceIds.filter((deviceId) => !access.grant(deviceId));
      const known = new Set(access.administrator && unheld.length > 0 ? (await devices.getDevices(unheld)).map((device) => device.id) : []);
      for (const deviceId of deviceIds) {
        const holding = access.grant(deviceId);
        const refused = refusal(access, holding || known.has(deviceId) ? { exists: true, holding } : { exists: false }, 'notifications');
        // A device one may not reach is refused as one that does not exist: a rule does not tell them apart.
        if (refused?.code === 'PERMISSION_REQUIRED') throw refused;
        if (refused) throw new AppError('FORBIDDEN', `You may not receive notifications of device ${deviceId}`);
      }
    }
    return { type: request.type, always, deviceIds, channels: request.channels, attributes, calendarId: null };
  }
}

function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('hex')}`;
}
