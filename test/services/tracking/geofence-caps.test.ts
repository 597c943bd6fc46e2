import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { Migrator } from 'kysely/migration';
import { migrateModules } from '../../../src/platform/db/migrations.ts';
import { trackingMigrations } from '../../../src/services/tracking/module.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { signIn } from '../../support/api.ts';
import type { SignedIn } from '../../support/api.ts';

/** A closed POLYGON of `points` points (the first repeated last). */
function polygon(points: number): string {
  const corners = Array.from({ length: points - 1 }, (_, index) => {
    const angle = (2 * Math.PI * index) / (points - 1);
    return `${(10 + Math.sin(angle)).toFixed(6)} ${(20 + Math.cos(angle)).toFixed(6)}`;
  });
  return `POLYGON ((${[...corners, corners[0]].join(', ')}))`;
}

function assertLimitReached(response: LightMyRequestResponse, limit: string, max: number, usage: number, path: string): void {
  assert.equal(response.statusCode, 409, response.body);
  const body = response.json();
  assert.equal(body.code, 'LIMIT_REACHED');
  assert.deepEqual(body.details, [{ path, message: body.message, limit, max, usage }]);
}

describeEachEngine('server limits on geofences', (engine) => {
  let server: TestServer;
  let admin: SignedIn;

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off', MAX_GEOFENCES_PER_USER: '2', MAX_GEOFENCE_POINTS_PER_USER: '12' });
    admin = await signIn(server, 'caps-admin@example.com', { administrator: true });
  });
  after(() => server.dispose());

  const create = (user: SignedIn, area: string) =>
    server.app.inject({ method: 'POST', url: '/api/geofences/', headers: user.authorization, payload: { name: 'Fence', area } });
  const update = (user: SignedIn, id: number, area: string) =>
    server.app.inject({ method: 'PUT', url: `/api/geofences/${id}`, headers: user.authorization, payload: { area } });
  const storedAreas = async (ownerId: number) =>
    (await server.database!.db.selectFrom('geofences').select(['id', 'area', 'points']).where('owner_id', '=', ownerId).orderBy('id').execute()) as {
      id: number;
      area: string;
      points: number;
    }[];

  it('MAX_GEOFENCES_PER_USER: a third geofence is refused and not stored', async () => {
    const user = await signIn(server, 'caps-count@example.com');
    assert.equal((await create(user, 'CIRCLE (1 2, 30)')).statusCode, 201, 'under the cap');
    assert.equal((await create(user, 'CIRCLE (1 2, 40)')).statusCode, 201, 'up to the cap');
    assertLimitReached(await create(user, 'CIRCLE (1 2, 50)'), 'geofences', 2, 2, '/body');
    assert.equal((await storedAreas(user.userId)).length, 2);
  });

  it('MAX_GEOFENCE_POINTS_PER_USER: the points of all areas together are capped, on create and on update', async () => {
    const user = await signIn(server, 'caps-points@example.com');
    const circle = await create(user, 'CIRCLE (1 2, 30)');
    assert.equal(circle.statusCode, 201);
    assertLimitReached(await create(user, polygon(12)), 'geofencePoints', 12, 1, '/body/area');
    assert.equal((await create(user, polygon(11))).statusCode, 201, 'up to the cap: 1 + 11 points');
    assert.deepEqual((await storedAreas(user.userId)).map((row) => row.points), [1, 11]);

    const circleId = circle.json().id as number;
    const grown = await update(user, circleId, 'LINESTRING (1 2, 3 4)');
    assertLimitReached(grown, 'geofencePoints', 12, 12, '/body/area');
    assert.equal((await storedAreas(user.userId))[0]?.area, 'CIRCLE (1 2, 30)', 'the refused update changed nothing');
    const polygonId = (await storedAreas(user.userId))[1]!.id;
    assert.equal((await update(user, polygonId, polygon(10))).statusCode, 200, 'shrinking is always allowed');
    assert.equal((await update(user, circleId, 'LINESTRING (1 2, 3 4)')).statusCode, 200, 'and frees points: 2 + 10');
    assert.deepEqual((await storedAreas(user.userId)).map((row) => row.points), [2, 10]);
  });

  it('administrators are exempt, also when they change another user’s geofence', async () => {
    for (let count = 0; count < 3; count++) assert.equal((await create(admin, polygon(12))).statusCode, 201);
    const user = await signIn(server, 'caps-admin-edit@example.com');
    const fence = (await create(user, 'CIRCLE (1 2, 30)')).json() as { id: number };
    assert.equal((await update(admin, fence.id, polygon(12))).statusCode, 200);
  });

  it('counts the points of geofences stored before the count existed', async () => {
    const database = await engine.createDatabase();
    try {
      const migrator = new Migrator({
        db: database.database.db,
        provider: { getMigrations: async () => trackingMigrations.migrations },
        migrationTableName: 'tracking_migrations',
        migrationLockTableName: 'tracking_migrations_lock',
      });
      assert.equal((await migrator.migrateTo('0001-tracking')).error, undefined);
      const areas = ['CIRCLE (1 2, 30)', 'POLYGON ((0 0, 0 1, 1 1, 0 0))', 'LINESTRING (1 2, 3 4, 5 6)'];
      const row = { owner_id: 1, name: 'Old', description: null, calendar_id: null, attributes: '{}', created_at: 0, updated_at: 0 };
      await database.database.db.insertInto('geofences').values(areas.map((area) => ({ ...row, area }))).execute();
      await migrateModules(database.database, [trackingMigrations]);
      const stored = await database.database.db.selectFrom('geofences').select(['area', 'points']).orderBy('id').execute();
      assert.deepEqual(stored.map((geofence: { points: number }) => geofence.points), [1, 4, 3]);
    } finally {
      await database.dispose();
    }
  });
});
