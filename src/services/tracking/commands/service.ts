import { enforceRateLimit } from '../../../platform/rate-limit.ts';
import type { RateLimiter } from '../../../platform/rate-limit.ts';
import { assertAccountMay } from '../../../platform/access-policy.ts';
import type { DeviceAction } from '../../../platform/access-policy.ts';
import { requireUser } from '../../auth/users/directory.ts';
import type { UserAccess, UserDirectory } from '../../auth/users/directory.ts';
import { authorize } from '../../devices/access.ts';
import type { DeviceAccessApi } from '../../devices/access.ts';
import { AppError } from '../errors.ts';
import { COMMAND_TYPES } from '../protocols/command-types.ts';
import type { CommandEncoder, CommandType } from '../protocols/command-types.ts';
import { ProtocolError } from '../protocols/types.ts';
import { PROTOCOL_REGISTRY, protocolEntry } from '../protocols/registry.ts';
import { invalidQuery, parseTime } from '../query.ts';
import type { CommandDelivery } from './delivery.ts';
import type { ProtocolMemory } from './protocol-memory.ts';
import type { CommandRepository, SavedCommandRow } from './repository.ts';
import type { CommandView, SavedCommandView } from './types.ts';
import { validateCommand } from './validation.ts';
import { commandView, savedCommandView } from './views.ts';

export interface SendRequest {
  deviceId: number;
  type?: string;
  attributes?: Record<string, unknown>;
  /** A saved command instead of type and attributes. */
  commandId?: number;
}

export interface SavedCommandInput {
  description: string;
  type: string;
  attributes?: Record<string, unknown>;
}

/**
 * Where a plan's `commands` feature (DESIGN §5.8) is checked before a send: billing's entitlement; absent (no billing
 * reachable), every user may send commands.
 */
export interface CommandFeatureCheck {
  /** Throws 402 FEATURE_NOT_IN_PLAN when the user's plan does not include commands. */
  assertCommandsAllowed(userId: number): Promise<void>;
}

export interface CommandServiceDeps {
  repository: CommandRepository;
  /** COMMAND_SEND_RATE: the sends one user may try per minute. */
  sendRate: { limiter: RateLimiter; sendsPerMinute: number };
  /** MAX_QUEUED_COMMANDS_PER_DEVICE, for the refusal's message. */
  maxQueuedPerDevice: number;
  protocols: ProtocolMemory;
  delivery: CommandDelivery;
  devices: DeviceAccessApi;
  users: UserDirectory;
  features?: CommandFeatureCheck;
  now?: () => number;
}

const HISTORY_LIMIT = 1000;
const DEFAULT_HISTORY_WINDOW_MS = 24 * 3600 * 1000;
const MAX_SAVED_PER_USER = 1000;

/**
 * What a device may be sent, by its protocol: only `custom` until its protocol is known; nothing over protocols without
 * commands (OsmAnd). The encoder is loaded with the protocol's decoder.
 */
async function commandSupport(protocol: string | undefined): Promise<{ types: readonly CommandType[]; encoder?: CommandEncoder }> {
  if (protocol === undefined) return { types: ['custom'] };
  const encoder = (await protocolEntry(protocol)?.decoder?.())?.commands;
  return encoder ? { types: encoder.supports, encoder } : { types: [] };
}

/** Every type some protocol can send, in the order of COMMAND_TYPES. */
async function anyProtocolTypes(): Promise<CommandType[]> {
  const supported = new Set((await Promise.all(PROTOCOL_REGISTRY.map(async (entry) => (await commandSupport(entry.name)).types))).flat());
  return COMMAND_TYPES.filter((type) => supported.has(type));
}

/** The commands API (DESIGN §5.7): who may send what, saved commands, history. Delivery does the sending. */
export class CommandService {
  readonly #deps: CommandServiceDeps;
  readonly #now: () => number;

  constructor(deps: CommandServiceDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
  }

  async types(userId: number, scope: object, deviceId: number | undefined): Promise<{ type: CommandType }[]> {
    if (deviceId === undefined) return (await anyProtocolTypes()).map((type) => ({ type }));
    await this.#assertCommandAccess(userId, scope, deviceId, 'commands');
    return (await commandSupport(await this.#deps.protocols.protocolOf(deviceId))).types.map((type) => ({ type }));
  }

  async send(userId: number, scope: object, request: SendRequest): Promise<CommandView> {
    const { delivery, sendRate } = this.#deps;
    const user = await this.#user(userId);
    // Every try counts, refused ones too: a script looping on a refusal is slowed as much as one that queues.
    await enforceRateLimit(sendRate.limiter, { name: 'command-send', limit: sendRate.sendsPerMinute, windowSeconds: 60 }, String(userId));
    if (request.commandId !== undefined && (request.type !== undefined || request.attributes !== undefined)) {
      throw new AppError('VALIDATION_FAILED', 'Send either commandId or type and attributes, not both');
    }
    if (request.commandId === undefined && request.type === undefined) throw new AppError('VALIDATION_FAILED', 'type (or commandId) is required');
    const saved = request.commandId === undefined ? undefined : await this.#usableSaved(user, request.commandId);
    await this.#assertCommandAccess(user, scope, request.deviceId, saved ? 'sendSaved' : 'send');
    // Plans (DESIGN §5.8): the one place a plan's `commands` feature is enforced.
    await this.#deps.features?.assertCommandsAllowed(userId);
    const command = saved
      ? validateCommand(saved.type, JSON.parse(saved.attributes) as Record<string, unknown>)
      : validateCommand(request.type as string, request.attributes ?? {});
    const protocol = await this.#deps.protocols.protocolOf(request.deviceId);
    const support = await commandSupport(protocol);
    if (!support.types.includes(command.type)) {
      throw new AppError('UNSUPPORTED_COMMAND', protocol === undefined
        ? 'The device has not connected yet: only custom commands can be queued for it'
        : `The device's protocol (${protocol}) cannot send ${command.type}`);
    }
    // What the protocol accepts is checked here, once; the frame is built once, when delivery writes it to the device.
    try {
      support.encoder?.check(command);
    } catch (error) {
      if (error instanceof ProtocolError) throw new AppError('INVALID_COMMAND_ATTRIBUTES', error.message);
      throw error;
    }
    const stored = await delivery.deliver({ deviceId: request.deviceId, userId, ...command, createdAt: this.#now() });
    if (!stored) {
      const max = this.#deps.maxQueuedPerDevice;
      throw new AppError('COMMAND_QUEUE_FULL', `${max} commands wait for this device already (MAX_QUEUED_COMMANDS_PER_DEVICE): wait until it connects, or until they expire`, {
        details: [{ path: '/body/deviceId', message: 'the queue of this device is full', limit: 'queuedCommandsPerDevice', max, usage: max }],
      });
    }
    return commandView(stored);
  }

  async history(userId: number, scope: object, query: { deviceId: number; from?: string; to?: string }): Promise<CommandView[]> {
    const to = query.to === undefined ? this.#now() : parseTime(query.to, 'to');
    const from = query.from === undefined ? to - DEFAULT_HISTORY_WINDOW_MS : parseTime(query.from, 'from');
    if (from > to) throw query.to === undefined ? invalidQuery('from', 'must not be after to (now when left out)') : invalidQuery('to', 'must not be before from');
    await this.#assertCommandAccess(userId, scope, query.deviceId, 'commands');
    const rows = await this.#deps.repository.history(query.deviceId, from, to, HISTORY_LIMIT);
    return rows.map(commandView);
  }

  async listSaved(userId: number): Promise<SavedCommandView[]> {
    const user = await this.#user(userId);
    return (await this.#deps.repository.listSaved(userId, user.administrator, MAX_SAVED_PER_USER * 10)).map(savedCommandView);
  }

  async getSaved(userId: number, id: number): Promise<SavedCommandView> {
    return savedCommandView(await this.#usableSaved(await this.#user(userId), id));
  }

  async createSaved(userId: number, input: SavedCommandInput): Promise<SavedCommandView> {
    const user = await this.#savedCommandWriter(userId);
    const command = validateCommand(input.type, input.attributes ?? {});
    const row = await this.#deps.repository.insertSaved(
      {
        user_id: userId,
        by_administrator: user.administrator ? 1 : 0,
        description: input.description,
        type: command.type,
        attributes: JSON.stringify(command.attributes),
        created_at: this.#now(),
      },
      (usage) => {
        if (usage >= MAX_SAVED_PER_USER) throw new AppError('SAVED_COMMANDS_LIMIT_REACHED');
      },
    );
    return savedCommandView(row);
  }

  /**
   * `byAdministrator` vouches for the command's content (limitCommands users may send it), so it survives only an edit
   * by someone who is an administrator now: a demoted creator's edit clears it, an administrator's edit of another
   * user's command never sets it.
   */
  async updateSaved(userId: number, id: number, input: SavedCommandInput): Promise<SavedCommandView> {
    const user = await this.#savedCommandWriter(userId);
    const current = await this.#ownSaved(user, id);
    const command = validateCommand(input.type, input.attributes ?? {});
    const row = await this.#deps.repository.updateSaved(id, {
      description: input.description,
      type: command.type,
      attributes: JSON.stringify(command.attributes),
      by_administrator: current.by_administrator === 1 && user.administrator ? 1 : 0,
    });
    if (!row) throw new AppError('NOT_FOUND', 'No such saved command');
    return savedCommandView(row);
  }

  async deleteSaved(userId: number, id: number): Promise<void> {
    const user = await this.#savedCommandWriter(userId);
    await this.#ownSaved(user, id);
    await this.#deps.repository.deleteSaved(id);
  }

  #user(userId: number): Promise<UserAccess> {
    return requireUser(this.#deps.users, userId);
  }

  /** A saved command the user may send and read: their own, an administrator's, or any for an administrator; else 404. */
  async #usableSaved(user: UserAccess, id: number): Promise<SavedCommandRow> {
    const row = await this.#deps.repository.findSaved(id);
    if (!row || !(row.user_id === user.id || row.by_administrator === 1 || user.administrator)) throw new AppError('NOT_FOUND', 'No such saved command');
    return row;
  }

  /** The user's own saved command (administrators: any); one they may only use answers 403. */
  async #ownSaved(user: UserAccess, id: number): Promise<SavedCommandRow> {
    const row = await this.#usableSaved(user, id);
    if (row.user_id !== user.id && !user.administrator) throw new AppError('FORBIDDEN', 'Only its creator may change this saved command');
    return row;
  }

  async #savedCommandWriter(userId: number): Promise<UserAccess> {
    const user = await this.#user(userId);
    assertAccountMay(user, 'writeSavedCommands');
    return user;
  }

  /** The access policy's answer for `action` on the device (docs/errors.md, Access); reading needs only the user's id, sending their account. */
  async #assertCommandAccess(caller: number | UserAccess, scope: object, deviceId: number, action: Extract<DeviceAction, 'commands' | 'send' | 'sendSaved'>): Promise<void> {
    const access = await this.#deps.devices.accessFor(typeof caller === 'number' ? caller : caller.id, scope);
    await authorize(access, typeof caller === 'number' ? access : caller, deviceId, action);
  }
}
