import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { SERVICE_NAMES } from '../src/config.ts';
import type { ServiceName } from '../src/config.ts';
import { FACT_CONSUMERS, MODULE_MIGRATIONS, MODULE_ROUTE_ACCESS, MODULES, wiringOrder } from '../src/modules.ts';
import { describeEachEngine } from './support/engines.ts';
import { startTestServer } from './support/server.ts';

/** Every subset of the modules, as SERVICES may name them. */
const SUBSETS: ServiceName[][] = Array.from({ length: 2 ** SERVICE_NAMES.length }, (_, bits) => SERVICE_NAMES.filter((_, index) => bits & (1 << index)));

describe('module descriptors', () => {
  it('one per module, and the tables every process knows are theirs', () => {
    assert.deepEqual(MODULES.map((descriptor) => descriptor.name).sort(), [...SERVICE_NAMES].sort());
    for (const descriptor of MODULES) {
      assert.equal(MODULE_MIGRATIONS[descriptor.name], descriptor.migrations);
      assert.equal(descriptor.migrations.module, descriptor.name, 'its migrations keep their books under its name');
      assert.ok(Object.keys(descriptor.migrations.migrations).length > 0, descriptor.name);
      assert.equal(MODULE_ROUTE_ACCESS[descriptor.name], descriptor.routeAccess);
    }
    assert.deepEqual(FACT_CONSUMERS, {
      'auth.user.deleted': ['devices', 'tracking', 'notifications'],
      'devices.device.deleted': ['tracking', 'notifications'],
      'tracking.event.created': ['notifications'],
    });
  });

  it('what a module needs, another provides, and may be reached remotely', () => {
    const providers = new Map(MODULES.filter((descriptor) => descriptor.provides).map((descriptor) => [descriptor.provides, descriptor]));
    assert.deepEqual([...providers.keys()].sort(), ['devices', 'entitlement', 'users']);
    for (const descriptor of MODULES) {
      for (const need of descriptor.needs) {
        const provider = providers.get(need);
        assert.ok(provider, `${descriptor.name} needs ${need}, which no module provides`);
        assert.equal(typeof provider.remote, 'function', `${need} has a remote adapter`);
      }
    }
  });

  it('a process creates a module after those of its modules that it needs', () => {
    for (const names of SUBSETS) {
      const order = wiringOrder(names);
      assert.deepEqual(order.map((descriptor) => descriptor.name).sort(), [...names].sort());
      order.forEach((descriptor, index) => {
        const later = new Set(order.slice(index + 1).map((other) => other.provides));
        for (const need of descriptor.needs) assert.ok(!later.has(need), `${names.join(',')}: ${descriptor.name} before the provider of ${need}`);
      });
    }
    assert.deepEqual(wiringOrder(['tracking', 'devices', 'auth']).map((descriptor) => descriptor.name), ['auth', 'devices', 'tracking']);
  });
});

describeEachEngine('a process runs the migrations of its own modules', (engine) => {
  it('devices and tracking: their bookkeeping tables hold every migration, and no other module has tables', async () => {
    const server = await startTestServer(engine, { SERVICES: 'devices,tracking' });
    try {
      const db = server.database!.db;
      const tables = new Set((await db.introspection.getTables()).map((table) => table.name));
      for (const name of ['devices', 'tracking'] as const) {
        const applied = await sql<{ name: string }>`select name from ${sql.table(`${name}_migrations`)} order by name`.execute(db);
        assert.deepEqual(applied.rows.map((row) => row.name), Object.keys(MODULE_MIGRATIONS[name].migrations).sort(), name);
      }
      assert.ok(!tables.has('auth_migrations') && !tables.has('users'), 'auth runs elsewhere');
      assert.ok(!tables.has('billing_migrations'), 'billing runs elsewhere');
    } finally {
      await server.dispose();
    }
  });
});
