/** The wire types of the devices and tracking APIs (spec §2.3–2.6), as a client sees them; the server's views are these types. */

import type { Command } from './plan-command-types.ts';

export interface DevicePermissions {
  /** View positions and history. */
  position: boolean;
  /** View device events. */
  events: boolean;
  /** View geofences. */
  geofences: boolean;
  /** Receive notifications. */
  notifications: boolean;
  /** Send commands to the device. */
  commands: boolean;
}

export type DeviceStatus = 'online' | 'offline' | 'unknown';

export interface Device {
  id: number;
  name: string;
  uniqueId: string;
  status: DeviceStatus;
  lastUpdate: string | null;
  positionId: number | null;
  phone: string | null;
  model: string | null;
  contact: string | null;
  category: string | null;
  disabled: boolean;
  expirationTime: string | null;
  groupId: number | null;
  calendarId: number | null;
  attributes: Record<string, unknown>;
  claimToken?: string;
  isOwner: boolean;
  permissions: DevicePermissions;
  sharedBy?: number;
}

export interface DeviceCreateRequest {
  name: string;
  uniqueId: string;
  phone?: string;
  model?: string;
  contact?: string;
  category?: string;
  attributes?: Record<string, unknown>;
  deviceToken?: string;
}

export interface DeviceUpdateRequest {
  name?: string;
  /** null clears it. */
  phone?: string | null;
  model?: string | null;
  contact?: string | null;
  category?: string | null;
  disabled?: boolean;
  attributes?: Record<string, unknown>;
}

export interface Share {
  deviceId: number;
  /** Null while no account has the address yet (a pending share), and in the answer to a new share. */
  userId: number | null;
  email: string;
  name: string | null;
  permissions: DevicePermissions;
  sharedBy: number;
  createdAt: string;
  updatedAt: string;
}

export type TokenValidateResponse =
  | { success: true; uniqueId: string; model: string; modelCode: string }
  | { success: false; errorCode: 'TOKEN_REQUIRED' | 'TOKEN_INVALID' | 'TOKEN_ALREADY_CLAIMED'; errorMessage: string };

export interface DeviceClaimResponse {
  success: boolean;
  device?: Device;
  alreadyClaimed?: boolean;
}

export interface ClaimToken {
  token: string;
  uniqueId: string | null;
  modelCode: string;
  model: string;
  status: 'unclaimed' | 'claimed' | 'revoked';
  claimedBy: number | null;
  claimedAt: string | null;
  createdAt: string;
}

export interface ClaimTokenCreateRequest {
  uniqueId?: string | null;
  modelCode: string;
  modelName?: string | null;
  transfer?: boolean;
}

export interface Position {
  id: number;
  deviceId: number;
  protocol: string | null;
  serverTime: string | null;
  deviceTime: string | null;
  fixTime: string | null;
  valid: boolean;
  latitude: number;
  longitude: number;
  altitude: number;
  /** Knots. */
  speed: number;
  course: number;
  accuracy: number;
  address: string | null;
  attributes: Record<string, unknown>;
}

/** The event types of spec §2.5, in the spec's order. */
export const EVENT_TYPES = [
  'deviceOnline',
  'deviceOffline',
  'deviceUnknown',
  'deviceInactive',
  'deviceMoving',
  'deviceStopped',
  'deviceOverspeed',
  'deviceFuelDrop',
  'deviceFuelIncrease',
  'geofenceEnter',
  'geofenceExit',
  'alarm',
  'ignitionOn',
  'ignitionOff',
  'maintenance',
  'textMessage',
  'driverChanged',
  'commandResult',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export interface TrackingEvent {
  id: number;
  type: EventType;
  eventTime: string | null;
  deviceId: number;
  positionId: number | null;
  geofenceId: number | null;
  maintenanceId: number | null;
  attributes: Record<string, unknown>;
}

export interface EventQuery {
  deviceId?: number;
  from?: string;
  to?: string;
  type?: EventType[];
}

export interface Geofence {
  id: number;
  name: string;
  description: string | null;
  /** WKT in lat-lon order: CIRCLE (lat lon, r), POLYGON ((lat lon, …)), LINESTRING (lat lon, …). */
  area: string;
  calendarId: number | null;
  attributes: Record<string, unknown>;
}

export interface GeofenceRequest {
  name?: string;
  description?: string | null;
  area?: string;
  attributes?: Record<string, unknown>;
}

/** One message of the live socket: any of the three lists, or `{}` as keepalive. */
export interface LiveMessage {
  devices?: Device[];
  positions?: Position[];
  events?: TrackingEvent[];
  commands?: Command[];
}
