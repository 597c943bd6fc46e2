import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError } from '../../../src/config.ts';
import { PLAN_CHANNELS, loadPlanCatalog } from '../../../src/services/billing/plans/catalog.ts';
import { startProcess } from '../../support/processes.ts';

const folder = mkdtempSync(path.join(tmpdir(), 'trackstack-plans-'));
after(() => rmSync(folder, { recursive: true, force: true }));

let written = 0;
function planFile(content: unknown): string {
  const file = path.join(folder, `plans-${(written += 1)}.json`);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

const FREE = { id: 'free', name: 'Free', default: true, limits: { devices: 1 } };
const PRO = { id: 'pro', name: 'Pro', products: { stripe: ['price_pro'], apple: ['app.pro'], google: ['pro'] } };

/** The content is refused with one ConfigError line on PLANS_FILE that matches `problem`. */
function assertRefused(content: unknown, problem: RegExp): void {
  assertFileRefused(planFile(content), problem);
}

function assertFileRefused(file: string, problem: RegExp): void {
  assert.throws(
    () => loadPlanCatalog(file),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.equal(error.variable, 'PLANS_FILE');
      assert.doesNotMatch(error.message, /\n/, 'one line');
      assert.match(error.message, problem);
      return true;
    },
  );
}

describe('plans file', () => {
  it('without PLANS_FILE: one default plan that limits nothing', () => {
    const catalog = loadPlanCatalog(undefined);
    assert.equal(catalog.plans.length, 1);
    assert.deepEqual(catalog.defaultPlan, {
      id: 'default',
      name: 'Unlimited',
      rank: 0,
      limits: { devices: null, geofences: null, shares: null, notificationRules: null, historyDays: null },
      features: { commands: true, reports: true, scheduledReports: true, channels: null },
    });
  });

  it('reads plans lowest rank first, fills what is left out as unlimited, and maps every product to its plan', () => {
    const catalog = loadPlanCatalog(planFile([FREE, PRO]));
    assert.deepEqual(catalog.plans.map((plan) => [plan.id, plan.rank]), [['free', 0], ['pro', 1]]);
    assert.equal(catalog.defaultPlan.id, 'free');
    assert.deepEqual(catalog.find('free')?.limits, { devices: 1, geofences: null, shares: null, notificationRules: null, historyDays: null });
    assert.deepEqual(catalog.find('pro')?.features, { commands: true, reports: true, scheduledReports: true, channels: null });
    assert.equal(catalog.forProduct('stripe', 'price_pro')?.id, 'pro');
    assert.equal(catalog.forProduct('apple', 'app.pro')?.id, 'pro');
    assert.equal(catalog.forProduct('google', 'pro')?.id, 'pro');
    assert.equal(catalog.forProduct('apple', 'price_pro'), undefined, 'a product id counts for its own provider only');
  });

  it('reads the report features; a missing flag allows', () => {
    const catalog = loadPlanCatalog(planFile([{ ...FREE, features: { reports: false } }, { ...PRO, features: { scheduledReports: false } }]));
    assert.deepEqual(catalog.find('free')?.features, { commands: true, reports: false, scheduledReports: true, channels: null });
    assert.deepEqual(catalog.find('pro')?.features, { commands: true, reports: true, scheduledReports: false, channels: null });
  });

  it('plans.example.json is valid: a free default plan and a paid one', () => {
    const catalog = loadPlanCatalog(path.resolve(import.meta.dirname, '../../../plans.example.json'));
    assert.deepEqual(catalog.plans.map((plan) => plan.id), ['free', 'pro']);
    assert.equal(catalog.defaultPlan.id, 'free');
    assert.equal(catalog.forProduct('stripe', 'price_pro_monthly')?.id, 'pro');
  });

  it('refuses a missing file and one that is not JSON', () => {
    assertFileRefused(path.join(folder, 'absent.json'), /^PLANS_FILE: cannot read .*absent\.json \(ENOENT\)$/);
    assertRefused('[{"id": "free",', /is not valid JSON/);
  });

  it('refuses each kind of bad content with one line naming the problem', () => {
    const cases: [unknown, RegExp][] = [
      [{ plans: [FREE] }, /expected a non-empty JSON array of plans/],
      [[], /expected a non-empty JSON array of plans/],
      [[FREE, 'pro'], /plan 2 is not an object/],
      [[{ ...FREE, limit: { devices: 1 } }], /plan 1 has an unknown field "limit"/],
      [[{ ...FREE, id: 'free plan' }], /plan 1: "id" must be/],
      [[{ ...FREE, id: 7 }], /plan 1: "id" must be/],
      [[FREE, { ...PRO, id: 'free' }], /plan "free" is defined twice/],
      [[{ ...FREE, name: '' }], /plan "free": "name" must be a non-empty string/],
      [[{ ...FREE, default: 'yes' }], /plan "free": "default" must be true or false/],
      [[{ ...FREE, default: false }, PRO], /exactly one plan must have "default": true, found none/],
      [[FREE, { ...PRO, default: true }], /exactly one plan must have "default": true, found "free", "pro"/],
      [[{ ...FREE, limits: [] }], /plan "free": "limits" must be an object/],
      [[{ ...FREE, limits: { trackers: 1 } }], /plan "free": unknown limit "trackers"/],
      [[{ ...FREE, limits: { devices: -1 } }], /plan "free": limit "devices" must be a whole number/],
      [[{ ...FREE, limits: { historyDays: 1.5 } }], /plan "free": limit "historyDays" must be a whole number/],
      [[{ ...FREE, limits: { devices: null } }], /plan "free": limit "devices" must be a whole number from 0 to \d+ \(leave it out for no limit\)/],
      [[{ ...FREE, features: true }], /plan "free": "features" must be an object/],
      [[{ ...FREE, features: { sms: true } }], /plan "free": unknown feature "sms"/],
      [[{ ...FREE, features: { commands: 'no' } }], /plan "free": feature "commands" must be true or false/],
      [[{ ...FREE, features: { reports: 1 } }], /plan "free": feature "reports" must be true or false/],
      [[{ ...FREE, features: { scheduledReports: 'yes' } }], /plan "free": feature "scheduledReports" must be true or false/],
      [[{ ...FREE, features: { channels: 'mail' } }], /plan "free": feature "channels" must be an array/],
      [[{ ...FREE, features: { channels: ['mail', 'sms'] } }], /plan "free": unknown channel "sms" \(known: web, mail/],
      [[FREE, { ...PRO, products: ['price_pro'] }], /plan "pro": "products" must be an object/],
      [[FREE, { ...PRO, products: { paypal: ['x'] } }], /plan "pro": unknown provider "paypal"/],
      [[FREE, { ...PRO, products: { stripe: 'price_pro' } }], /plan "pro": "products.stripe" must be an array of product ids/],
      [[FREE, { ...PRO, products: { stripe: ['price pro'] } }], /plan "pro": "products.stripe" must be an array of product ids/],
      [[{ ...FREE, products: { stripe: ['price_pro'] } }, PRO], /stripe product "price_pro" is listed by plan "free" and plan "pro"/],
    ];
    for (const [content, problem] of cases) assertRefused(content, problem);
  });

  it('accepts every channel name of DESIGN §5.6 and a product listed twice by one plan', () => {
    const catalog = loadPlanCatalog(planFile([{ ...FREE, features: { channels: [...PLAN_CHANNELS] }, products: { stripe: ['p', 'p'] } }]));
    assert.deepEqual(catalog.defaultPlan.features.channels, [...PLAN_CHANNELS]);
  });

  it('a bad file stops the start with one line naming the problem', async () => {
    const file = planFile([{ ...FREE, default: false }]);
    await assert.rejects(
      startProcess({ SERVICES: 'billing', DATA_DIR: path.join(folder, 'data'), PLANS_FILE: file, LOG_LEVEL: 'silent' }, { timeoutMs: 20_000 }),
      (error: Error) => {
        const lines = error.message.split('\n').filter((line) => line.trim() !== '');
        assert.ok(lines.includes(`Configuration error: PLANS_FILE: ${file}: exactly one plan must have "default": true, found none`), error.message);
        assert.equal(lines.filter((line) => line.startsWith('Configuration error')).length, 1);
        return true;
      },
    );
  });
});
