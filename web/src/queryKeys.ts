/**
 * Every query key of the app, in one place. A key's first parts name what it caches, so invalidating
 * a shorter key (`queryKeys.notifications.all`) refreshes every query under it.
 */
import type { EventQuery } from '../../src/client/index.ts';

export const queryKeys = {
  profile: ['profile'] as const,
  devices: ['devices'] as const,
  device: (id: number) => ['device', id] as const,
  /** Latest positions of every device, or of one. */
  latestPositions: (deviceId?: number) => (deviceId === undefined ? (['positions', 'latest'] as const) : (['positions', 'latest', deviceId] as const)),
  history: (deviceId: number, from: string, to: string) => ['history', deviceId, from, to] as const,
  geofences: ['geofences'] as const,
  shares: (deviceId: number) => ['shares', deviceId] as const,
  subscriptions: (userId: number) => ['subscriptions', userId] as const,
  legal: (type: string) => ['legal', type] as const,
  pushSubscription: ['push', 'subscription'] as const,
  events: {
    all: ['events'] as const,
    list: (filters: EventQuery) => ['events', 'list', filters] as const,
    ofDevice: (deviceId: number) => ['events', 'device', deviceId] as const,
  },
  commands: {
    types: (deviceId: number) => ['commands', 'types', deviceId] as const,
    history: (deviceId: number) => ['commands', 'history', deviceId] as const,
    saved: ['commands', 'saved'] as const,
  },
  notifications: {
    all: ['notifications'] as const,
    rules: ['notifications', 'rules'] as const,
    types: ['notifications', 'types'] as const,
    channels: ['notifications', 'channels'] as const,
    deliveries: ['notifications', 'deliveries'] as const,
    failedDeliveries: ['notifications', 'deliveries', 'failed'] as const,
    targets: ['notifications', 'targets'] as const,
  },
  admin: {
    users: ['admin', 'users'] as const,
    usersPage: (search: string, page: number) => ['admin', 'users', search, page] as const,
    claimTokens: ['admin', 'claim-tokens'] as const,
  },
};
