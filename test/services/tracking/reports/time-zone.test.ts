import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { partsOf, periodsOf, addUp } from '../../../../src/services/tracking/reports/summary.ts';
import { ZoneClock, canonicalTimeZone } from '../../../../src/services/tracking/reports/time-zone.ts';

const HOUR = 3_600_000;
const at = (text: string) => Date.parse(text);

describe('local days of a time zone', () => {
  it('UTC days are 24 hours from midnight', () => {
    const utc = new ZoneClock('UTC');
    assert.deepEqual(utc.dayStartsBetween(at('2025-03-01T10:00:00Z'), at('2025-03-03T00:00:00Z')), [at('2025-03-02T00:00:00Z'), at('2025-03-03T00:00:00Z')]);
    assert.equal(utc.isoTime(at('2025-03-01T10:00:00Z')), '2025-03-01T10:00:00.000Z');
  });

  it('Europe/Berlin: the spring day lasts 23 hours, the autumn day 25', () => {
    const berlin = new ZoneClock('Europe/Berlin');
    const spring = berlin.dayStartsBetween(at('2025-03-29T12:00:00Z'), at('2025-03-31T12:00:00Z'));
    assert.deepEqual(spring, [at('2025-03-29T23:00:00Z'), at('2025-03-30T22:00:00Z')]);
    assert.equal((spring[1] as number) - (spring[0] as number), 23 * HOUR);
    const autumn = berlin.dayStartsBetween(at('2025-10-25T12:00:00Z'), at('2025-10-27T12:00:00Z'));
    assert.deepEqual(autumn, [at('2025-10-25T22:00:00Z'), at('2025-10-26T23:00:00Z')]);
    assert.equal((autumn[1] as number) - (autumn[0] as number), 25 * HOUR);
    assert.equal(berlin.isoTime(at('2025-03-30T00:59:59.999Z')), '2025-03-30T01:59:59.999+01:00');
    assert.equal(berlin.isoTime(at('2025-03-30T01:00:00Z')), '2025-03-30T03:00:00.000+02:00');
  });

  it('half-hour and negative zones: Asia/Kolkata, America/St_Johns', () => {
    const kolkata = new ZoneClock('Asia/Kolkata');
    assert.deepEqual(kolkata.dayStartsBetween(at('2025-03-01T00:00:00Z'), at('2025-03-02T00:00:00Z')), [at('2025-03-01T18:30:00Z')]);
    assert.equal(kolkata.isoTime(at('2025-03-01T18:30:00Z')), '2025-03-02T00:00:00.000+05:30');
    const stJohns = new ZoneClock('America/St_Johns');
    assert.equal(stJohns.dayStart(at('2025-01-15T12:00:00Z')), at('2025-01-15T03:30:00Z'));
    assert.equal(stJohns.isoTime(at('2025-01-15T03:30:00Z')), '2025-01-15T00:00:00.000-03:30');
  });

  it('a day whose midnight does not exist begins where the DST gap ends (America/Santiago, 7 September 2025)', () => {
    const santiago = new ZoneClock('America/Santiago');
    // Clocks go from 00:00 (UTC-4) straight to 01:00 (UTC-3): the day begins at 04:00 UTC.
    assert.equal(santiago.dayStart(at('2025-09-07T15:00:00Z')), at('2025-09-07T04:00:00Z'));
    assert.deepEqual(santiago.dayStartsBetween(at('2025-09-06T12:00:00Z'), at('2025-09-08T12:00:00Z')), [at('2025-09-07T04:00:00Z'), at('2025-09-08T03:00:00Z')]);
  });

  it('names: canonical IANA names, undefined for anything else', () => {
    assert.equal(canonicalTimeZone('europe/berlin'), 'Europe/Berlin');
    assert.equal(canonicalTimeZone('Mars/Olympus'), undefined);
  });
});

describe('summary parts', () => {
  it('a period is its whole UTC hours and the partial hours at its edges', () => {
    const from = at('2025-03-01T09:30:00Z');
    const to = at('2025-03-01T12:15:00Z');
    assert.deepEqual(partsOf({ from, to }), {
      hours: { start: at('2025-03-01T10:00:00Z'), end: at('2025-03-01T12:00:00Z') },
      edges: [{ from, to: at('2025-03-01T10:00:00Z') - 1 }, { from: at('2025-03-01T12:00:00Z'), to }],
    });
    const whole = { from: at('2025-03-01T00:00:00Z'), to: at('2025-03-02T00:00:00Z') - 1 };
    assert.deepEqual(partsOf(whole), { hours: { start: whole.from, end: whole.to + 1 }, edges: [] });
    const inside = { from: at('2025-03-01T10:10:00Z'), to: at('2025-03-01T10:20:00Z') };
    assert.deepEqual(partsOf(inside).edges, [inside]);
    assert.deepEqual(periodsOf({ from: 0, to: 99 }, [40, 70]), [{ from: 0, to: 39 }, { from: 40, to: 69 }, { from: 70, to: 99 }]);
  });

  it('parts add up in time order: the odometers run from the first part to the last', () => {
    const part = (firstTime: number, distance: number, odometer: number) => ({
      firstTime, lastTime: firstTime + 5, positions: 2, distance, maxSpeed: firstTime, speedSum: 10, startOdometer: odometer, endOdometer: odometer + distance, engineHours: 1, spentFuel: 2,
    });
    assert.deepEqual(addUp([part(0, 100, 900), undefined, part(10, 50, 1000), part(20, 30, 1050)]), {
      firstTime: 0, lastTime: 25, positions: 6, distance: 180, maxSpeed: 20, speedSum: 30, startOdometer: 900, endOdometer: 1080, engineHours: 3, spentFuel: 6,
    });
    assert.equal(addUp([undefined]), undefined);
  });
});
