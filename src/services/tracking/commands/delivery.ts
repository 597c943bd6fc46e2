import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { EventBus } from '../../../platform/bus.ts';
import type { CommandType } from '../protocols/command-types.ts';
import type { CommandChannel, DeviceLink } from '../ingest/device-link.ts';
import type { CommandRepository, CommandRow, NewCommand, QueueCap } from './repository.ts';
import { commandJson, commandView } from './views.ts';

export interface CommandDeliveryOptions {
  repository: CommandRepository;
  bus: EventBus;
  /** With REDIS_URL: the registry of which instance holds which device's connection. */
  redis: Redis | undefined;
  /** EVENT_CHANNEL: keeps the registry of deployments sharing a Redis apart. */
  keyPrefix: string;
  /** COMMAND_TTL in milliseconds. */
  ttlMs: number;
  /** MAX_QUEUED_COMMANDS_PER_DEVICE. */
  maxQueuedPerDevice: number;
  log: FastifyBaseLogger;
  now?: () => number;
}

/** How long a registry entry lives without being renewed (an instance that died stops owning its devices). */
const REGISTRY_TTL_MS = 90_000;
const REGISTRY_RENEW_MS = 30_000;
/** How long a send waits for the instance holding the connection before it answers 202 queued. */
const ROUTE_TIMEOUT_MS = 2_000;
const EXPIRY_SWEEP_MS = 60_000;
/** What a send on this instance's connection answers when the device's queue is full. */
const QUEUE_FULL = Symbol('queue full');
/** Deletes the registry entry only while it still names this instance (a newer connection elsewhere keeps its own). */
const RELEASE_SCRIPT = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/**
 * Gets commands to devices (docs/commands.md, "Delivery"). Every command is a row first (queued); whoever writes it
 * to a device claims it with a conditional update (queued → sent), so it goes out once whichever instances try.
 * Commands of one device go out in id order: each instance sends a device's commands one flush at a time.
 */
export class CommandDelivery implements CommandChannel {
  readonly instanceId = randomUUID();
  readonly #options: CommandDeliveryOptions;
  readonly #now: () => number;
  readonly #links = new Map<number, DeviceLink>();
  /** Each device's latest work in its send order here: the next waits for it. */
  readonly #flushes = new Map<number, Promise<void>>();
  /** Sends waiting for another instance to write their command, by command id. */
  readonly #waiting = new Map<number, () => void>();
  #timers: NodeJS.Timeout[] = [];

  constructor(options: CommandDeliveryOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    options.bus.on('tracking.commands.route', ({ instanceId, deviceId }) => {
      if (instanceId === this.instanceId) void this.flush(deviceId);
    });
    options.bus.on('tracking.commands.changed', ({ commands }) => {
      for (const { id, status } of commands) {
        if (status !== 'queued') this.#waiting.get(id)?.();
      }
    });
  }

  start(): void {
    this.#timers.push(setInterval(() => void this.sweep(), EXPIRY_SWEEP_MS).unref());
    if (this.#options.redis) this.#timers.push(setInterval(() => void this.#renewRegistry(), REGISTRY_RENEW_MS).unref());
  }

  stop(): void {
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
  }

  attach(deviceId: number, link: DeviceLink): void {
    this.#links.set(deviceId, link);
    // Registered before the flush: a send that found no holder in the registry committed its row before this flush
    // claims, so it goes out now; one that found this instance is routed here.
    void this.#register(deviceId).then(() => this.flush(deviceId, { expire: true }));
  }

  detach(deviceId: number, link: DeviceLink): void {
    if (this.#links.get(deviceId) !== link) return;
    this.#links.delete(deviceId);
    const { redis } = this.#options;
    if (redis) {
      redis.eval(RELEASE_SCRIPT, 1, this.#registryKey(deviceId), this.instanceId).catch((error: unknown) => {
        this.#options.log.warn({ err: error, deviceId }, 'commands: could not release a device in the registry');
      });
    }
  }

  /**
   * Stores an accepted send and tries to get it out: on this instance's connection, else through the instance the
   * registry names. Answers the command as it is then: sent when written, still queued when nobody holds the device;
   * undefined, storing nothing, when MAX_QUEUED_COMMANDS_PER_DEVICE commands wait for the device already.
   */
  async deliver(command: NewCommand): Promise<CommandRow | undefined> {
    let outcome = this.#links.has(command.deviceId) ? await this.#sendHere(command) : undefined;
    if (outcome === undefined) {
      const queued = await this.#options.repository.insert(command, this.#queueCap());
      if (!queued) return undefined;
      outcome = await this.#route(queued);
    }
    if (outcome === QUEUE_FULL) return undefined;
    // Still waiting for its device: users who see the device learn of it now, the rest of its life as it happens.
    if (outcome.status === 'queued') await this.#announce([outcome]);
    return outcome;
  }

  #queueCap(): QueueCap {
    return { since: this.#now() - this.#options.ttlMs, max: this.#options.maxQueuedPerDevice };
  }

  /**
   * The send of a device connected here, in the device's send order: stored already claimed and written at once when
   * nothing is queued ahead of it (one statement before the frame), else queued and flushed behind the older ones.
   * Undefined when the connection closed before it was stored; QUEUE_FULL when it would wait behind a full queue.
   */
  #sendHere(command: NewCommand): Promise<CommandRow | typeof QUEUE_FULL | undefined> {
    const { repository } = this.#options;
    return this.#inSendOrder(command.deviceId, async () => {
      const link = this.#links.get(command.deviceId);
      if (!link) return undefined;
      const stored = await repository.insertClaimed(command, this.#queueCap(), this.#now());
      if (!stored) return QUEUE_FULL;
      const moved = new Map<number, CommandRow>();
      if (stored.status === 'sent') await this.#write(stored, link, moved);
      else for (const [id, row] of await this.#flushNow(command.deviceId, false, stored.id)) moved.set(id, row);
      return moved.get(stored.id) ?? (await repository.findById(stored.id)) ?? stored;
    });
  }

  /** A queued command of a device not connected here: handed to the instance the registry names, if any. */
  async #route(command: CommandRow): Promise<CommandRow> {
    const { repository, bus } = this.#options;
    const holder = await this.#holderOf(command.device_id);
    if (!holder || holder === this.instanceId) return command;
    const settled = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ROUTE_TIMEOUT_MS);
      this.#waiting.set(command.id, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    try {
      await bus.publish('tracking.commands.route', { instanceId: holder, deviceId: command.device_id });
      await settled;
      return (await repository.findById(command.id)) ?? command;
    } catch (error) {
      this.#options.log.warn({ err: error, deviceId: command.device_id }, 'commands: could not ask the instance holding the device; the command stays queued');
      return command;
    } finally {
      this.#waiting.delete(command.id);
    }
  }

  /**
   * Sends the device's queued commands on its connection here, oldest first; one flush per device at a time. `expire`
   * (on a new connection) first moves those past COMMAND_TTL to expired; a send's flush leaves that to the sweep, and
   * its claims skip them. `until`: stop after that command. Answers the commands it moved, by id.
   */
  flush(deviceId: number, options: { expire?: boolean; until?: number } = {}): Promise<Map<number, CommandRow>> {
    return this.#inSendOrder(deviceId, () => this.#flushNow(deviceId, options.expire ?? false, options.until)).catch((error: unknown) => {
      this.#options.log.error({ err: error, deviceId }, 'commands: sending queued commands failed');
      return new Map<number, CommandRow>();
    });
  }

  /** Runs `work` once the device's earlier sends and flushes here are done: this instance writes a device's commands in id order. */
  #inSendOrder<T>(deviceId: number, work: () => Promise<T>): Promise<T> {
    const result = (this.#flushes.get(deviceId) ?? Promise.resolve()).then(work);
    const done = result.then(
      () => undefined,
      () => undefined,
    );
    this.#flushes.set(deviceId, done);
    void done.then(() => {
      if (this.#flushes.get(deviceId) === done) this.#flushes.delete(deviceId);
    });
    return result;
  }

  async answered(deviceId: number, answerTo: number | undefined): Promise<number | undefined> {
    const { repository } = this.#options;
    const at = this.#now();
    // The protocol echoed the command's id (GT06's server flag): that command, when it is this device's and awaits an answer.
    if (answerTo !== undefined && answerTo > 0) {
      const named = await repository.findById(answerTo);
      if (named?.device_id === deviceId) {
        const delivered = await repository.transition(named.id, 'sent', 'delivered', at);
        if (delivered) {
          await this.#announce([delivered]);
          return delivered.id;
        }
      }
    }
    // Otherwise the answer belongs to the device's oldest command awaiting one (devices answer in order).
    for (;;) {
      const oldest = await repository.oldestSent(deviceId);
      if (!oldest) return undefined;
      const delivered = await repository.transition(oldest.id, 'sent', 'delivered', at);
      if (delivered) {
        await this.#announce([delivered]);
        return delivered.id;
      }
    }
  }

  /** Queued commands past COMMAND_TTL become expired (every instance sweeps; each row moves once). */
  async sweep(): Promise<void> {
    try {
      await this.#announce(await this.#options.repository.expire(this.#now() - this.#options.ttlMs));
    } catch (error) {
      this.#options.log.error({ err: error }, 'commands: expiring queued commands failed');
    }
  }

  async #flushNow(deviceId: number, expire: boolean, until: number | undefined): Promise<Map<number, CommandRow>> {
    const { repository, ttlMs } = this.#options;
    const moved = new Map<number, CommandRow>();
    if (!this.#links.has(deviceId)) return moved;
    const cutoff = this.#now() - ttlMs;
    if (expire) await this.#announce(await repository.expire(cutoff, deviceId));
    for (;;) {
      const link = this.#links.get(deviceId);
      // The connection closed meanwhile: the rest wait for the next one.
      if (!link) return moved;
      const claimed = await repository.claimOldest(deviceId, cutoff, this.#now());
      if (!claimed) return moved;
      if (!(await this.#write(claimed, link, moved))) return moved;
      // A send's flush stops at its own command: newer ones belong to sends that flush for themselves.
      if (until !== undefined && claimed.id >= until) return moved;
    }
  }

  /**
   * Writes a claimed command on the device's connection and records the outcome in `moved`: sent; failed when the
   * protocol cannot express it; back in the queue when the connection is gone (false: nothing more goes out on it).
   */
  async #write(claimed: CommandRow, link: DeviceLink, moved: Map<number, CommandRow>): Promise<boolean> {
    const { repository } = this.#options;
    const frame = this.#encode(claimed, link);
    if (frame === undefined) {
      const failed = (await repository.transition(claimed.id, 'sent', 'failed', this.#now())) ?? claimed;
      moved.set(failed.id, failed);
      await this.#announce([failed]);
      return true;
    }
    if (!link.write(frame)) {
      // The connection closed between the claim and the write: nothing went out, so the command waits for the device's
      // next connection, which may already be open here or elsewhere. The dead connection is let go at once.
      this.detach(claimed.device_id, link);
      const requeued = await repository.transition(claimed.id, 'sent', 'queued', this.#now());
      if (requeued) moved.set(requeued.id, requeued);
      void this.#redeliver(claimed.device_id);
      return false;
    }
    moved.set(claimed.id, claimed);
    await this.#announce([claimed]);
    return true;
  }

  /** Offers the device's queue to whichever instance holds its connection now. */
  async #redeliver(deviceId: number): Promise<void> {
    if (this.#links.has(deviceId)) {
      await this.flush(deviceId);
      return;
    }
    const holder = await this.#holderOf(deviceId);
    if (!holder || holder === this.instanceId) return;
    try {
      await this.#options.bus.publish('tracking.commands.route', { instanceId: holder, deviceId });
    } catch (error) {
      this.#options.log.warn({ err: error, deviceId }, 'commands: could not ask the instance holding the device');
    }
  }

  /** The command's frame; undefined when the protocol cannot express it (queued before the device's protocol was known). */
  #encode(command: CommandRow, link: DeviceLink): Buffer | undefined {
    try {
      const encoder = link.protocol.commands;
      if (!encoder?.supports.includes(command.type as CommandType)) throw new Error(`${link.protocol.name} cannot send ${command.type}`);
      return encoder.encode(
        { type: command.type as CommandType, attributes: JSON.parse(command.attributes) as Record<string, unknown> },
        { uniqueId: link.uniqueId, sequence: command.id, now: new Date(this.#now()) },
      );
    } catch (error) {
      this.#options.log.info({ err: error, deviceId: command.device_id, commandId: command.id }, 'commands: a queued command cannot be encoded');
      return undefined;
    }
  }

  /** A hint (live updates, waiting senders): its failure is logged, never the command's. */
  async #announce(rows: readonly CommandRow[]): Promise<void> {
    if (rows.length === 0) return;
    try {
      await this.#options.bus.publish('tracking.commands.changed', {
        commands: rows.map((row) => ({ id: row.id, deviceId: row.device_id, status: row.status, json: commandJson(commandView(row)) })),
      });
    } catch (error) {
      this.#options.log.warn({ err: error }, 'commands: a status change could not be published');
    }
  }

  /** The instance the registry names for the device; undefined without Redis, or when Redis fails (the command stays queued). */
  async #holderOf(deviceId: number): Promise<string | undefined> {
    try {
      return (await this.#options.redis?.get(this.#registryKey(deviceId))) ?? undefined;
    } catch (error) {
      this.#options.log.warn({ err: error, deviceId }, 'commands: the device registry could not be read; the command stays queued');
      return undefined;
    }
  }

  #registryKey(deviceId: number): string {
    return `${this.#options.keyPrefix}:command-device:${deviceId}`;
  }

  async #register(deviceId: number): Promise<void> {
    try {
      await this.#options.redis?.set(this.#registryKey(deviceId), this.instanceId, 'PX', REGISTRY_TTL_MS);
    } catch (error) {
      this.#options.log.warn({ err: error, deviceId }, 'commands: could not register a device connection');
    }
  }

  async #renewRegistry(): Promise<void> {
    const { redis } = this.#options;
    if (!redis || this.#links.size === 0) return;
    const pipeline = redis.pipeline();
    for (const deviceId of this.#links.keys()) pipeline.set(this.#registryKey(deviceId), this.instanceId, 'PX', REGISTRY_TTL_MS);
    try {
      await pipeline.exec();
    } catch (error) {
      this.#options.log.warn({ err: error }, 'commands: could not renew the device registry');
    }
  }
}
