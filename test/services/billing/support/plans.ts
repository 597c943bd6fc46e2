import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import type { Reply } from '../../devices/helpers.ts';

/** The plans the plan tests run with: a free default, a pro plan sold by every store, and a team plan ranked above it. */
export const TEST_PLANS = [
  {
    id: 'free',
    name: 'Free',
    default: true,
    limits: { devices: 2, geofences: 1, shares: 1, notificationRules: 3, historyDays: 7 },
    features: { commands: false, channels: ['web', 'mail'] },
  },
  {
    id: 'pro',
    name: 'Pro',
    products: { stripe: ['price_pro_monthly'], apple: ['trackstack.pro.monthly'], google: ['pro_monthly'] },
    limits: { devices: 3, geofences: 2, shares: 2, historyDays: 30 },
  },
  { id: 'team', name: 'Team', products: { stripe: ['price_team'] } },
];

/** The plan files of this test process, removed when its tests are done. */
const folder = mkdtempSync(path.join(tmpdir(), 'trackstack-plans-'));
after(() => rmSync(folder, { recursive: true, force: true }));
let written = 0;

/** Writes TEST_PLANS to a fresh file and answers its path. */
export function writeTestPlans(plans: unknown = TEST_PLANS): string {
  const file = path.join(folder, `plans-${(written += 1)}.json`);
  writeFileSync(file, JSON.stringify(plans));
  return file;
}

/** 402 PLAN_LIMIT_REACHED whose details name the limit, its value and the usage before the request. */
export function assertPlanLimit(reply: Reply, limit: string, max: number, usage: number): void {
  assert.equal(reply.status, 402, JSON.stringify(reply.body));
  assert.equal(reply.body.code, 'PLAN_LIMIT_REACHED');
  assert.equal(reply.body.error, 'Payment Required');
  assert.deepEqual(reply.body.details, [{ path: '/body', message: reply.body.message, limit, max, usage }]);
}

/** For assert.rejects: the error an entitlement check throws past a limit, as the route would answer it. */
export function planLimitError(limit: string, max: number, usage: number, message: string) {
  return (error: { statusCode: number; code: string; details: unknown[] }): boolean => {
    assert.equal(error.statusCode, 402);
    assert.equal(error.code, 'PLAN_LIMIT_REACHED');
    assert.deepEqual(error.details, [{ path: '/body', message, limit, max, usage }]);
    return true;
  };
}
