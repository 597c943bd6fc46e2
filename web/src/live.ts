import type { QueryClient } from '@tanstack/react-query';
import { useSyncExternalStore } from 'react';
import { LiveSocket } from '../../src/client/index.ts';
import type { Command, Device, LiveStatus, Position, TrackingEvent } from '../../src/client/index.ts';
import { api } from './api.ts';
import { notifyWebRules } from './web-notifications.ts';
import { queryKeys } from './queryKeys.ts';

const RECENT_EVENTS = 20;

/** How often screens hear of live changes at most: a fleet map needs no more, and 1 000 devices reporting each second then cost 4 renders a second, not one per message. */
const FLUSH_MS = 250;

/**
 * What the live socket says, for every screen: the latest position of each device, the latest
 * events and the connection state. Device changes go straight into the query cache. Listeners are
 * told at most every FLUSH_MS however many messages arrived.
 */
class LiveStore {
  /** The latest position of each device, as of the last flush: a new Map each time one changed, so it can be a hook's dependency. */
  positions: ReadonlyMap<number, Position> = new Map<number, Position>();
  /** Where messages and seeds write; copied to `positions` at the next flush. */
  private latest = new Map<number, Position>();
  private positionsChanged = false;
  events: TrackingEvent[] = [];
  status: LiveStatus = 'closed';
  version = 0;
  private readonly listeners = new Set<() => void>();
  private socket: LiveSocket | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Device changes wait for the next flush too: each would otherwise re-render every screen showing devices. */
  private pendingDevices = new Map<number, Device>();
  private queryClient: QueryClient | undefined;

  start(queryClient: QueryClient): void {
    if (this.socket) return;
    this.queryClient = queryClient;
    this.socket = new LiveSocket(api, {
      onStatus: (status) => {
        this.status = status;
        this.changed();
      },
      onMessage: (message) => {
        for (const position of message.positions ?? []) {
          const known = this.latest.get(position.deviceId);
          if (!known || (position.fixTime ?? '') >= (known.fixTime ?? '')) {
            this.latest.set(position.deviceId, position);
            this.positionsChanged = true;
          }
        }
        for (const device of message.devices ?? []) this.pendingDevices.set(device.id, device);
        if (message.commands?.length) mergeCommands(queryClient, message.commands);
        if (message.events?.length) {
          this.events = [...message.events.toReversed(), ...this.events].slice(0, RECENT_EVENTS);
          void queryClient.invalidateQueries({ queryKey: queryKeys.events.all });
          // A failed read of the rules costs only these browser notifications; the events are shown anyway.
          notifyWebRules(queryClient, message.events).catch(() => undefined);
        }
        if (message.positions?.length || message.events?.length || message.devices?.length) this.changed();
      },
    });
  }

  stop(): void {
    this.socket?.close();
    this.socket = undefined;
    this.pendingDevices.clear();
    this.latest = new Map();
    this.positionsChanged = true;
    this.events = [];
    this.changed();
  }

  /** Positions read from the API (before the socket's first message) fill what the socket has not said yet. */
  seed(positions: Position[]): void {
    let added = false;
    for (const position of positions) {
      if (!this.latest.has(position.deviceId)) {
        this.latest.set(position.deviceId, position);
        this.positionsChanged = true;
        added = true;
      }
    }
    if (added) this.changed();
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  private changed(): void {
    this.version += 1;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      if (this.positionsChanged) {
        this.positions = new Map(this.latest);
        this.positionsChanged = false;
      }
      if (this.pendingDevices.size > 0 && this.queryClient) {
        mergeDevices(this.queryClient, [...this.pendingDevices.values()]);
        this.pendingDevices.clear();
      }
      for (const listener of this.listeners) listener();
    }, FLUSH_MS);
  }
}

function mergeDevices(queryClient: QueryClient, changed: Device[]): void {
  queryClient.setQueryData<Device[]>(queryKeys.devices, (devices) => {
    if (!devices) return devices;
    const byId = new Map(changed.map((device) => [device.id, device]));
    const merged = devices.map((device) => byId.get(device.id) ?? device);
    for (const device of changed) if (!devices.some((known) => known.id === device.id)) merged.push(device);
    return merged;
  });
  for (const device of changed) queryClient.setQueryData(queryKeys.device(device.id), device);
}

/** Status changes go into each device's command history at once: they are few, and a person is waiting on them. */
function mergeCommands(queryClient: QueryClient, changed: Command[]): void {
  for (const command of changed) {
    queryClient.setQueryData<Command[]>(queryKeys.commands.history(command.deviceId), (history) => {
      if (!history) return history;
      return history.some((known) => known.id === command.id) ? history.map((known) => (known.id === command.id ? command : known)) : [...history, command];
    });
  }
}

export const live = new LiveStore();

/** Re-renders when the live data changes; returns the store. */
export function useLive(): LiveStore {
  useSyncExternalStore(live.subscribe, () => live.version);
  return live;
}
