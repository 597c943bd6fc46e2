import type { FastifyBaseLogger } from 'fastify';
import type { DeviceAccess, DeviceAccessApi } from '../../devices/access.ts';
import { ThrottledWriter } from '../throttled-writer.ts';
import type { Clock } from '../throttled-writer.ts';
import type { LiveConnection } from './connection.ts';

export type Channel = 'devices' | 'positions' | 'events' | 'commands';

export const CHANNELS: readonly Channel[] = ['devices', 'positions', 'events', 'commands'];

export interface SubscriberDeps {
  devices: Pick<DeviceAccessApi, 'accessFor' | 'viewsFor'>;
  log: FastifyBaseLogger;
  clock: Clock;
  /** How often the access is read again without being told to. */
  accessRefreshMs: number;
  /** Least time between two devices messages. */
  deviceUpdateIntervalMs: number;
  /** Takes a fresh access into the hub's indexes; answers the devices the user sees now and did not before. */
  applyAccess(subscriber: Subscriber, access: DeviceAccess): number[];
}

/**
 * The sockets of one user on this instance, sharing that user's device access: it reads the access
 * again (one read at a time, a request meanwhile folding into one more) and sends the changed
 * devices at most once per deviceUpdateIntervalMs.
 */
export class Subscriber {
  readonly userId: number;
  readonly connections = new Set<LiveConnection>();
  /** Device ids per channel: every granted device, those with `position`, those with `events`, those with `commands`. */
  readonly devices: Record<Channel, Set<number>> = { devices: new Set(), positions: new Set(), events: new Set(), commands: new Set() };
  /** The user's device access, once read. */
  access: DeviceAccess | undefined;
  /** Set when the user's last socket went: nothing more is read or sent. */
  closed = false;
  readonly #deps: SubscriberDeps;
  #cancelRefreshTimer: () => void;
  #refreshing = false;
  /** Another read is wanted once the one under way ends (it may have started before the change). */
  #refreshAgain = false;
  /** Devices reported changed and not yet sent to the user. */
  readonly #changedDevices = new Set<number>();
  readonly #devicesWriter: ThrottledWriter;

  constructor(userId: number, deps: SubscriberDeps) {
    this.userId = userId;
    this.#deps = deps;
    this.#devicesWriter = new ThrottledWriter({
      intervalMs: deps.deviceUpdateIntervalMs,
      clock: deps.clock,
      // A refresh under way sends when it ends, so the views follow the fresh access.
      pending: () => !this.#refreshing && this.#changedDevices.size > 0,
      write: () => this.#sendDevices(),
    });
    this.#cancelRefreshTimer = this.#scheduleRefresh();
  }

  /** Encodes once for all of the user's sockets. */
  send(text: string): void {
    const data = Buffer.from(text);
    for (const connection of this.connections) connection.send(data);
  }

  /** The device changed: the user gets it as the user sees it, with the other changes of the interval. */
  deviceChanged(deviceId: number): void {
    this.#changedDevices.add(deviceId);
  }

  /** Sends the changed devices now or, within the interval of the last message, at its end. */
  sendChangedDevices(): void {
    this.#devicesWriter.request();
  }

  /** Reads the access again, then sends the devices that became visible and those changed meanwhile. */
  refresh(): void {
    this.#refreshAgain = true;
    if (this.#refreshing) return;
    this.#refreshing = true;
    void this.#refreshRounds().finally(() => {
      this.#refreshing = false;
      this.sendChangedDevices();
    });
  }

  close(): void {
    this.closed = true;
    this.#cancelRefreshTimer();
    this.#devicesWriter.stop();
  }

  #scheduleRefresh(): () => void {
    return this.#deps.clock.after(this.#deps.accessRefreshMs, () => {
      this.refresh();
      this.#cancelRefreshTimer = this.#scheduleRefresh();
    });
  }

  async #refreshRounds(): Promise<void> {
    while (this.#refreshAgain && !this.closed) {
      this.#refreshAgain = false;
      try {
        const access = await this.#deps.devices.accessFor(this.userId);
        for (const deviceId of this.#deps.applyAccess(this, access)) this.#changedDevices.add(deviceId);
      } catch (error) {
        this.#deps.log.warn({ err: error, userId: this.userId }, 'live: device access could not be refreshed');
      }
    }
  }

  #sendDevices(): Promise<void> | undefined {
    const access = this.access;
    if (!access || this.closed) return undefined;
    const deviceIds = [...this.#changedDevices].filter((deviceId) => this.devices.devices.has(deviceId));
    this.#changedDevices.clear();
    if (deviceIds.length === 0) return undefined;
    return this.#deps.devices.viewsFor(access, deviceIds).then(
      (views) => {
        if (views.length > 0) this.send(JSON.stringify({ devices: views }));
      },
      (error: unknown) => this.#deps.log.warn({ err: error, userId: this.userId }, 'live: changed devices could not be read'),
    );
  }
}
