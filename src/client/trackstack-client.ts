import { AuthClient } from './auth-client.ts';
import type {
  DeliveryStatus,
  NotificationDelivery,
  NotificationRule,
  NotificationRuleRequest,
  NotificationTestResult,
  PushTarget,
  PushTargetRequest,
} from './notification-types.ts';
import type { Command, CommandSendRequest, SavedCommand, Subscriptions } from './plan-command-types.ts';
import type { GeofenceVisit, ReportFormat, ReportKind, ReportQuery, StopReport, SummaryReport, SummaryReportQuery, TripReport } from './report-types.ts';
import type {
  ClaimToken,
  ClaimTokenCreateRequest,
  Device,
  DeviceClaimResponse,
  DeviceCreateRequest,
  DevicePermissions,
  DeviceUpdateRequest,
  EventQuery,
  Geofence,
  GeofenceRequest,
  Position,
  Share,
  TokenValidateResponse,
  TrackingEvent,
} from './tracking-types.ts';

/** The whole public API: auth (inherited) plus devices, sharing, claim tokens, positions, events and geofences, all with the refresh rule. */
export class TrackstackClient extends AuthClient {
  // Devices

  devices(): Promise<Device[]> {
    return this.request('GET', '/api/devices');
  }

  device(id: number): Promise<Device> {
    return this.request('GET', `/api/devices/${id}`);
  }

  createDevice(request: DeviceCreateRequest): Promise<Device> {
    return this.request('POST', '/api/devices', request);
  }

  updateDevice(id: number, changes: DeviceUpdateRequest): Promise<Device> {
    return this.request('PUT', `/api/devices/${id}`, changes);
  }

  deleteDevice(id: number): Promise<void> {
    return this.request('DELETE', `/api/devices/${id}`);
  }

  /** The public preview of a claim token: what device it names. Failures come in the body, not as errors. */
  validateClaimToken(token: string): Promise<TokenValidateResponse> {
    return this.publicCall('POST', '/api/devices/validate-token', { token });
  }

  claimDevice(token: string): Promise<DeviceClaimResponse> {
    return this.request('POST', '/api/devices/claim', { token });
  }

  // Sharing (owners)

  shares(deviceId: number): Promise<Share[]> {
    return this.request('GET', `/api/devices/${deviceId}/shares`);
  }

  shareDevice(deviceId: number, email: string, permissions: Partial<DevicePermissions>): Promise<Share> {
    return this.request('POST', `/api/devices/${deviceId}/shares`, { email, permissions });
  }

  updateShare(deviceId: number, userId: number, permissions: Partial<DevicePermissions>): Promise<Share> {
    return this.request('PUT', `/api/devices/${deviceId}/shares/${userId}`, { permissions });
  }

  /** Ends a share by user id, or a pending one (no account yet) by e-mail. */
  unshareDevice(deviceId: number, who: { userId: number } | { email: string }): Promise<void> {
    return 'userId' in who
      ? this.request('DELETE', `/api/devices/${deviceId}/shares/${who.userId}`)
      : this.request('DELETE', `/api/devices/${deviceId}/shares?${new URLSearchParams({ email: who.email })}`);
  }

  // Claim tokens (administrators)

  claimTokens(query: { status?: ClaimToken['status']; uniqueId?: string; limit?: number; offset?: number } = {}): Promise<ClaimToken[]> {
    return this.request('GET', `/api/devices/claim-tokens${queryString(query)}`);
  }

  createClaimToken(request: ClaimTokenCreateRequest): Promise<ClaimToken> {
    return this.request('POST', '/api/devices/claim-tokens', request);
  }

  deleteClaimToken(token: string): Promise<void> {
    return this.request('DELETE', `/api/devices/claim-tokens/${encodeURIComponent(token)}`);
  }

  // Positions

  /** The latest position of each of the caller's devices, or of one. */
  latestPositions(deviceId?: number): Promise<Position[]> {
    return this.request('GET', `/api/positions${queryString({ deviceId })}`);
  }

  /** Positions of one device between two instants, by fixTime ascending (400 RANGE_TOO_LARGE over 100 000). */
  history(deviceId: number, from: Date, to: Date): Promise<Position[]> {
    return this.request('GET', `/api/positions${queryString({ deviceId, from: from.toISOString(), to: to.toISOString() })}`);
  }

  // Events

  events(query: EventQuery = {}): Promise<TrackingEvent[]> {
    return this.request('GET', `/api/events${queryString(query)}`);
  }

  // Geofences

  geofences(): Promise<Geofence[]> {
    return this.request('GET', '/api/geofences');
  }

  createGeofence(request: GeofenceRequest & { name: string; area: string }): Promise<Geofence> {
    return this.request('POST', '/api/geofences', request);
  }

  updateGeofence(id: number, changes: GeofenceRequest): Promise<Geofence> {
    return this.request('PUT', `/api/geofences/${id}`, changes);
  }

  deleteGeofence(id: number): Promise<void> {
    return this.request('DELETE', `/api/geofences/${id}`);
  }

  // Commands

  /** The command types the device's protocol can send ([] for OsmAnd; only custom until it has connected). */
  commandTypes(deviceId: number): Promise<{ type: string }[]> {
    return this.request('GET', `/api/commands/types${queryString({ deviceId })}`);
  }

  /** 200 with status sent when written to the device's connection, 202 with status queued otherwise: the status says which. */
  sendCommand(request: CommandSendRequest): Promise<Command> {
    return this.request('POST', '/api/commands/send', request);
  }

  commandHistory(deviceId: number, range: { from?: Date; to?: Date } = {}): Promise<Command[]> {
    return this.request('GET', `/api/commands/history${queryString({ deviceId, from: range.from?.toISOString(), to: range.to?.toISOString() })}`);
  }

  savedCommands(): Promise<SavedCommand[]> {
    return this.request('GET', '/api/commands');
  }

  saveCommand(request: { description: string; type: string; attributes: Record<string, unknown> }): Promise<SavedCommand> {
    return this.request('POST', '/api/commands', request);
  }

  deleteSavedCommand(id: number): Promise<void> {
    return this.request('DELETE', `/api/commands/${id}`);
  }

  // Notifications

  notificationRules(): Promise<NotificationRule[]> {
    return this.request('GET', '/api/notifications');
  }

  /** The answer carries `webhookSecret` once, when the rule gains its first webhook. */
  createNotificationRule(request: NotificationRuleRequest): Promise<NotificationRule> {
    return this.request('POST', '/api/notifications', request);
  }

  updateNotificationRule(id: number, request: NotificationRuleRequest): Promise<NotificationRule> {
    return this.request('PUT', `/api/notifications/${id}`, request);
  }

  deleteNotificationRule(id: number): Promise<void> {
    return this.request('DELETE', `/api/notifications/${id}`);
  }

  notificationTypes(): Promise<{ type: string }[]> {
    return this.request('GET', '/api/notifications/types');
  }

  /** The channels this server has configured. */
  notificationChannels(): Promise<{ name: string }[]> {
    return this.request('GET', '/api/notifications/channels');
  }

  /** Sends a test notification to the caller on one channel, or on every configured one. */
  async testNotification(channel?: string): Promise<NotificationTestResult[]> {
    const answer = await this.request<{ results: NotificationTestResult[] }>('POST', '/api/notifications/test', channel ? { channel } : {});
    return answer.results;
  }

  pushTargets(): Promise<PushTarget[]> {
    return this.request('GET', '/api/notifications/targets');
  }

  /** 201 for a new target; the same token or endpoint again answers the existing one. */
  registerPushTarget(request: PushTargetRequest): Promise<PushTarget> {
    return this.request('POST', '/api/notifications/targets', request);
  }

  deletePushTarget(id: number): Promise<void> {
    return this.request('DELETE', `/api/notifications/targets/${id}`);
  }

  /** The VAPID public key (base64url) a browser subscribes with. */
  async webPushKey(): Promise<string> {
    return (await this.request<{ publicKey: string }>('GET', '/api/notifications/targets/webpush-key')).publicKey;
  }

  deliveries(status?: DeliveryStatus): Promise<NotificationDelivery[]> {
    return this.request('GET', `/api/notifications/deliveries${queryString({ status })}`);
  }

  retryDelivery(id: number): Promise<NotificationDelivery> {
    return this.request('POST', `/api/notifications/deliveries/${id}/retry`);
  }

  // Plan

  /** The user's subscriptions, the plan in force and what they hold of each limited kind. */
  subscriptions(userId: number): Promise<Subscriptions> {
    return this.request('GET', `/api/subscriptions/${userId}`);
  }

  // Reports (docs/reports.md)

  tripsReport(query: ReportQuery): Promise<TripReport[]> {
    return this.request('GET', reportPath('trips', query));
  }

  stopsReport(query: ReportQuery): Promise<StopReport[]> {
    return this.request('GET', reportPath('stops', query));
  }

  summaryReport(query: SummaryReportQuery): Promise<SummaryReport[]> {
    return this.request('GET', reportPath('summary', query));
  }

  /** The devices' positions in the window, device after device. */
  routeReport(query: ReportQuery): Promise<Position[]> {
    return this.request('GET', reportPath('route', query));
  }

  eventsReport(query: ReportQuery): Promise<TrackingEvent[]> {
    return this.request('GET', reportPath('events', query));
  }

  geofencesReport(query: ReportQuery): Promise<GeofenceVisit[]> {
    return this.request('GET', reportPath('geofences', query));
  }

  /** A report as a file: CSV text or an XLSX workbook, times in your account's timezone. */
  downloadReport(kind: ReportKind, query: ReportQuery | SummaryReportQuery, format: ReportFormat): Promise<Uint8Array> {
    return this.download(reportPath(kind, query), REPORT_MEDIA_TYPES[format]);
  }

  /** Where the live socket of this API is (ws: or wss:). */
  socketUrl(): string {
    const url = new URL('/api/socket', this.apiBase());
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    return url.toString();
  }
}

const REPORT_MEDIA_TYPES: Record<ReportFormat, string> = {
  csv: 'text/csv',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

function reportPath(kind: ReportKind, query: ReportQuery | SummaryReportQuery): string {
  const daily = 'daily' in query && query.daily ? 'true' : undefined;
  return `/api/reports/${kind}${queryString({ deviceId: query.deviceIds, from: query.from.toISOString(), to: query.to.toISOString(), daily })}`;
}

/** A query string of the defined values; arrays repeat their key. */
function queryString(query: object): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query) as [string, unknown][]) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? (value as unknown[]) : [value]) params.append(key, String(item));
  }
  return params.size > 0 ? `?${params}` : '';
}
