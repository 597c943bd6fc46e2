import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { EventBus } from '../../../platform/bus.ts';
import type { Identity } from '../../../platform/http/identity.ts';
import type { DeviceAccess, DeviceAccessApi } from '../../devices/access.ts';
import type { LiveCommand, LiveEvent, LivePosition } from '../domain-events.ts';
import { positionsJson } from '../positions/formats.ts';
import type { PositionService } from '../positions/service.ts';
import { systemClock } from '../throttled-writer.ts';
import type { Clock } from '../throttled-writer.ts';
import { LiveConnection } from './connection.ts';
import { CLOSE_CODES, KEEPALIVE_MESSAGE, arrayMessage, positionsArrayMessage } from './protocol.ts';
import { CHANNELS, Subscriber } from './subscriber.ts';
import type { Channel } from './subscriber.ts';

export interface LiveOptions {
  /** How often every socket gets `{}` and a ping; a socket that left the previous ping unanswered is dropped. */
  keepaliveMs: number;
  /**
   * How often a connected user's device access is read again, besides at once on 'devices.access.changed':
   * a backstop for what no event announces (an account made administrator or no longer).
   */
  accessRefreshMs: number;
  /** Least time between two devices messages to one user; changes in between are sent together. */
  deviceUpdateIntervalMs: number;
  /** Unsent bytes a socket may hold before it is closed as a slow consumer. */
  maxBufferedBytes: number;
  /** Sockets one user may hold open on one instance. */
  maxSocketsPerUser: number;
}

export const DEFAULT_LIVE_OPTIONS: Readonly<LiveOptions> = Object.freeze({
  keepaliveMs: 55_000,
  accessRefreshMs: 60_000,
  deviceUpdateIntervalMs: 1_000,
  maxBufferedBytes: 1 << 20,
  maxSocketsPerUser: 50,
});

export interface LiveDeps {
  bus: EventBus;
  devices: DeviceAccessApi;
  positions: PositionService;
  log: FastifyBaseLogger;
  /** The system's unless a test passes its own. */
  clock?: Clock;
}

/** setTimeout cannot wait longer than this (about 24.8 days); longer waits are taken in steps. */
const MAX_TIMER_MS = 2_147_483_647;

/** Which subscribers watch each device on one channel, so fan-out costs a map lookup per item. */
class Watchers {
  private readonly byDevice = new Map<number, Set<Subscriber>>();

  of(deviceId: number): Set<Subscriber> | undefined {
    return this.byDevice.get(deviceId);
  }

  add(deviceId: number, subscriber: Subscriber): void {
    let set = this.byDevice.get(deviceId);
    if (!set) this.byDevice.set(deviceId, (set = new Set()));
    set.add(subscriber);
  }

  remove(deviceId: number, subscriber: Subscriber): void {
    const set = this.byDevice.get(deviceId);
    if (!set) return;
    set.delete(subscriber);
    if (set.size === 0) this.byDevice.delete(deviceId);
  }
}

/**
 * Live updates of one instance: keeps its own sockets, grouped by user, and forwards to them what
 * the bus reports (from this process, or from others through Redis), filtered by each user's
 * device access held in memory. Bus handlers never query the database and never throw, since
 * publishers (ingestion) wait for them.
 */
export class LiveHub {
  private readonly bus: EventBus;
  private readonly devices: DeviceAccessApi;
  private readonly positions: PositionService;
  private readonly log: FastifyBaseLogger;
  private readonly options: LiveOptions;
  private readonly clock: Clock;
  private readonly subscribers = new Map<number, Subscriber>();
  private readonly sessions = new Map<string, Set<LiveConnection>>();
  private readonly watchers: Record<Channel, Watchers> = { devices: new Watchers(), positions: new Watchers(), events: new Watchers(), commands: new Watchers() };
  private keepaliveTimer: NodeJS.Timeout | undefined;
  /** Sockets open on this instance: the keepalive timer runs while there are any. */
  private connectionCount = 0;
  private stopped = false;

  constructor(deps: LiveDeps, options: Partial<LiveOptions> = {}) {
    this.bus = deps.bus;
    this.devices = deps.devices;
    this.positions = deps.positions;
    this.log = deps.log;
    this.options = { ...DEFAULT_LIVE_OPTIONS, ...options };
    this.clock = deps.clock ?? systemClock;

    this.bus.on('tracking.positions.stored', ({ positions }) => this.fanOut('positions', positions));
    this.bus.on('tracking.events.created', ({ events }) => this.fanOut('events', events));
    // Command status changes (a custom command's text included) reach those who may read the device's command history.
    this.bus.on('tracking.commands.changed', ({ commands }) => this.fanOut('commands', commands));
    this.bus.on('devices.device.updated', ({ deviceIds }) => this.devicesChanged(deviceIds));
    this.bus.on('devices.access.changed', ({ userIds, deviceIds }) => this.accessChanged(userIds, deviceIds));
    this.bus.on('devices.device.deleted', ({ deviceId }) => this.forgetDevice(deviceId));
    this.bus.on('auth.sessions.revoked', ({ sessions }) => {
      for (const { id } of sessions) this.closeSession(id, 'session revoked');
    });
  }

  mayConnect(userId: number): boolean {
    return (this.subscribers.get(userId)?.connections.size ?? 0) < this.options.maxSocketsPerUser;
  }

  /**
   * Takes over an upgraded socket: it gets `{"positions": [...]}` with the latest position of each
   * device the user may see positions of, then the live messages. `tokenExpiresAt` (epoch ms)
   * closes it when the access token that opened it expires.
   */
  async connect(socket: WebSocket, identity: Identity, tokenExpiresAt: number | undefined): Promise<void> {
    const connection = new LiveConnection(socket, identity, this.options.maxBufferedBytes);
    socket.on('close', () => this.remove(connection));
    socket.on('pong', () => {
      connection.alive = true;
    });
    if (this.stopped) {
      connection.close(CLOSE_CODES.goingAway, 'server shutting down');
      return;
    }
    const subscriber = this.add(connection);
    if (tokenExpiresAt !== undefined) this.closeAtExpiry(connection, tokenExpiresAt);
    if (connection.closed) return;

    try {
      // One scope: the latest-position query reuses the access read here.
      const scope = {};
      const access = await this.devices.accessFor(identity.userId, scope);
      if (connection.closed) return;
      this.applyAccess(subscriber, access);
      const answer = await this.positions.query(identity.userId, scope, {});
      if (connection.closed) return;
      connection.start(Buffer.from(positionsArrayMessage(positionsJson(answer.kind === 'list' ? answer.rows : []))));
    } catch (error) {
      this.log.error({ err: error, userId: identity.userId }, 'live: a socket could not be set up');
      connection.close(CLOSE_CODES.serverError, 'server error');
      this.remove(connection);
    }
  }

  /** Closes every socket (going away) and stops the timers; later connections are refused. */
  stop(): void {
    this.stopped = true;
    for (const subscriber of [...this.subscribers.values()]) {
      for (const connection of [...subscriber.connections]) {
        connection.close(CLOSE_CODES.goingAway, 'server shutting down');
        this.remove(connection);
      }
    }
  }

  /**
   * The devices' status, lastUpdate or latest position changed: each user who sees one of them gets
   * the devices as that user sees them, at most once per deviceUpdateIntervalMs (changes meanwhile
   * are sent together).
   */
  private devicesChanged(deviceIds: readonly number[]): void {
    const affected = new Set<Subscriber>();
    for (const deviceId of deviceIds) {
      for (const subscriber of this.watchers.devices.of(deviceId) ?? []) {
        subscriber.deviceChanged(deviceId);
        affected.add(subscriber);
      }
    }
    for (const subscriber of affected) subscriber.sendChangedDevices();
  }

  private add(connection: LiveConnection): Subscriber {
    const { userId, sessionId } = connection.identity;
    let subscriber = this.subscribers.get(userId);
    if (!subscriber) {
      subscriber = new Subscriber(userId, {
        devices: this.devices,
        log: this.log,
        clock: this.clock,
        accessRefreshMs: this.options.accessRefreshMs,
        deviceUpdateIntervalMs: this.options.deviceUpdateIntervalMs,
        applyAccess: (refreshed, access) => this.applyAccess(refreshed, access),
      });
      this.subscribers.set(userId, subscriber);
    }
    subscriber.connections.add(connection);
    if (sessionId) {
      let sessions = this.sessions.get(sessionId);
      if (!sessions) this.sessions.set(sessionId, (sessions = new Set()));
      sessions.add(connection);
    }
    this.connectionCount++;
    this.keepaliveTimer ??= setInterval(() => this.keepalive(), this.options.keepaliveMs).unref();
    return subscriber;
  }

  /** Idempotent: called when the socket closes and when this side closes it. */
  private remove(connection: LiveConnection): void {
    const { userId, sessionId } = connection.identity;
    const subscriber = this.subscribers.get(userId);
    if (!subscriber?.connections.delete(connection)) return;
    connection.closed = true;
    connection.cancelExpiry?.();
    const sessions = this.sessions.get(sessionId);
    sessions?.delete(connection);
    if (sessions?.size === 0) this.sessions.delete(sessionId);
    if (subscriber.connections.size === 0) {
      subscriber.close();
      for (const channel of CHANNELS) {
        for (const deviceId of subscriber.devices[channel]) this.watchers[channel].remove(deviceId, subscriber);
      }
      this.subscribers.delete(userId);
    }
    this.connectionCount--;
    if (this.connectionCount === 0) {
      clearInterval(this.keepaliveTimer);
      this.keepaliveTimer = undefined;
    }
  }

  /** Answers the devices the user sees now and did not before. */
  private applyAccess(subscriber: Subscriber, access: DeviceAccess): number[] {
    if (subscriber.closed) return [];
    subscriber.access = access;
    const next: Record<Channel, Set<number>> = {
      devices: new Set(access.grants.map((grant) => grant.deviceId)),
      positions: new Set(access.deviceIdsWith('position')),
      events: new Set(access.deviceIdsWith('events')),
      commands: new Set(access.deviceIdsWith('commands')),
    };
    const added: number[] = [];
    for (const deviceId of next.devices) if (!subscriber.devices.devices.has(deviceId)) added.push(deviceId);
    for (const channel of CHANNELS) {
      const current = subscriber.devices[channel];
      const watchers = this.watchers[channel];
      for (const deviceId of current) {
        if (!next[channel].has(deviceId)) {
          current.delete(deviceId);
          watchers.remove(deviceId, subscriber);
        }
      }
      for (const deviceId of next[channel]) {
        if (!current.has(deviceId)) {
          current.add(deviceId);
          watchers.add(deviceId, subscriber);
        }
      }
    }
    return added;
  }

  /** One message per user and bus event, holding that user's share of the items. */
  private fanOut(channel: Exclude<Channel, 'devices'>, items: readonly (LivePosition | LiveEvent | LiveCommand)[]): void {
    if (this.subscribers.size === 0) return;
    try {
      const batches = new Map<Subscriber, string[]>();
      for (const item of items) {
        const watchers = this.watchers[channel].of(item.deviceId);
        if (!watchers) continue;
        for (const subscriber of watchers) {
          const batch = batches.get(subscriber);
          if (batch) batch.push(item.json);
          else batches.set(subscriber, [item.json]);
        }
      }
      for (const [subscriber, batch] of batches) subscriber.send(arrayMessage(channel, batch));
    } catch (error) {
      this.log.error({ err: error, channel }, 'live: fan-out failed');
    }
  }

  private forgetDevice(deviceId: number): void {
    for (const channel of CHANNELS) {
      const watchers = this.watchers[channel];
      for (const subscriber of [...(watchers.of(deviceId) ?? [])]) {
        subscriber.devices[channel].delete(deviceId);
        watchers.remove(deviceId, subscriber);
      }
    }
  }

  /** Device fields, owners or shares changed: the users concerned read their access again and get the devices as they now see them. */
  private accessChanged(userIds: readonly number[], deviceIds: readonly number[]): void {
    const affected = new Set<Subscriber>();
    for (const userId of userIds) {
      const subscriber = this.subscribers.get(userId);
      if (subscriber) affected.add(subscriber);
    }
    for (const deviceId of deviceIds) {
      for (const subscriber of this.watchers.devices.of(deviceId) ?? []) {
        subscriber.deviceChanged(deviceId);
        affected.add(subscriber);
      }
    }
    for (const subscriber of affected) subscriber.refresh();
  }

  private closeSession(sessionId: string, reason: string): void {
    for (const connection of [...(this.sessions.get(sessionId) ?? [])]) {
      connection.close(CLOSE_CODES.unauthorized, reason);
      this.remove(connection);
    }
  }

  private closeAtExpiry(connection: LiveConnection, expiresAt: number): void {
    const delay = expiresAt - this.clock.now();
    if (delay <= 0) {
      connection.close(CLOSE_CODES.unauthorized, 'token expired');
      this.remove(connection);
      return;
    }
    connection.cancelExpiry = this.clock.after(Math.min(delay, MAX_TIMER_MS), () => this.closeAtExpiry(connection, expiresAt));
  }

  private keepalive(): void {
    const keepalive = Buffer.from(KEEPALIVE_MESSAGE);
    for (const subscriber of [...this.subscribers.values()]) {
      for (const connection of [...subscriber.connections]) {
        if (!connection.alive) {
          // No pong since the last round: the peer is gone without closing (a half-open TCP connection).
          connection.closed = true;
          connection.socket.terminate();
          this.remove(connection);
          continue;
        }
        connection.alive = false;
        if (connection.socket.readyState === connection.socket.OPEN) connection.socket.ping();
        connection.send(keepalive);
      }
    }
  }
}
