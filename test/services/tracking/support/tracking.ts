import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { EventBus } from '../../../../src/platform/bus.ts';
import { createDevicesModule } from '../../../../src/services/devices/module.ts';
import type { DeviceAccessApi } from '../../../../src/services/devices/access.ts';
import { createTrackingModule } from '../../../../src/services/tracking/module.ts';
import type { TrackingModule } from '../../../../src/services/tracking/module.ts';
import { instanceContext } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';

export const ALL = { position: true, events: true, geofences: true, notifications: true, commands: true };
export const NONE = { position: false, events: false, geofences: false, notifications: false, commands: false };

/**
 * The tracking module's internal interface on the test server's database, for storing positions
 * and events until ingestion exists: a second instance of the devices and tracking modules. It
 * shares the server's bus, so it hears geofence changes and deletions as another process would.
 */
export async function trackingInstance(server: TestServer): Promise<{ tracking: TrackingModule; devices: DeviceAccessApi }> {
  const database = server.database;
  const users = server.auth?.api.users;
  assert.ok(database && users);
  const ctx = instanceContext(server);
  // The devices instance gets a bus of its own: the server's devices module already handles account deletions.
  const devices = await createDevicesModule({ ...ctx, bus: new EventBus(server.app.log) }, { users });
  const tracking = await createTrackingModule(ctx, { devices: devices.api, users });
  return { tracking, devices: devices.api };
}

export async function createDevice(server: TestServer, owner: TestLogin, uniqueId: string): Promise<number> {
  const response = await server.app.inject({ method: 'POST', url: '/api/devices/', headers: owner.authorization, payload: { name: `Tracker ${uniqueId}`, uniqueId } });
  assert.equal(response.statusCode, 201, response.body);
  return response.json().id as number;
}

export async function share(server: TestServer, owner: TestLogin, deviceId: number, email: string, permissions: Partial<typeof ALL>): Promise<void> {
  const response = await server.app.inject({
    method: 'POST',
    url: `/api/devices/${deviceId}/shares`,
    headers: owner.authorization,
    payload: { email, permissions: { ...NONE, ...permissions } },
  });
  assert.equal(response.statusCode, 201, response.body);
}

export function get(server: TestServer, url: string, user: TestLogin, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return server.app.inject({ method: 'GET', url, headers: { ...user.authorization, ...headers } });
}
