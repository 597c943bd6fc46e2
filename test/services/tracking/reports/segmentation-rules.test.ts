// The motion rules of reports (DESIGN §5.9) on the pure machine: the cases Traccar's trip tests cover (ReportUtilsTest:
// simple trips and stops, with ignition, speed fluctuation), plus a short stop, a gap without data, midnight, overrides,
// odometer against great-circle distance, and that the state survives JSON (it is stored between rounds).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_ENGINE_SETTINGS, effectiveSettings } from '../../../../src/services/tracking/engine/index.ts';
import type { EngineSettings } from '../../../../src/services/tracking/engine/index.ts';
import { initialSegmentationState, ongoingSegment, step } from '../../../../src/services/tracking/reports/segmentation/machine.ts';
import type { HourSums, Segment, SegmentationState, SegmentedPosition } from '../../../../src/services/tracking/reports/segmentation/machine.ts';
import { stopRow, tripRow } from '../../../../src/services/tracking/reports/segmentation/service.ts';

const DEVICE = 3;
const MINUTE = 60_000;
const T0 = Date.parse('2016-01-01T00:00:00.000Z');
/** Metres per degree of latitude on the engine's sphere. */
const METRES_PER_DEGREE = (6_371_008.8 * Math.PI) / 180;
/** Traccar's test device: minimal trip distance 500 m, duration 300 s, parking 180 s, no data 900 s. */
const TRACCAR_TEST: EngineSettings = { ...DEFAULT_ENGINE_SETTINGS, minimalTripDistance: 500, minimalTripDuration: 300, minimalParkingDuration: 180, minimalNoDataDuration: 900 };

/** Where the test odometer starts: a reading of 0 means "none" to the machine (as to the engine), so Traccar's 0 becomes this. */
const BASE = 100_000;

/** Traccar's test position: minutes from T0, a speed in knots and the device's total distance in metres (from BASE). */
function at(id: number, minutes: number, speed: number, totalDistance: number | null, attributes: Record<string, unknown> = {}): SegmentedPosition {
  return {
    id,
    deviceId: DEVICE,
    protocol: 'osmand',
    serverTime: T0 + minutes * MINUTE,
    deviceTime: T0 + minutes * MINUTE,
    fixTime: T0 + minutes * MINUTE,
    valid: true,
    latitude: 10,
    longitude: 20,
    speed,
    attributes: totalDistance === null ? attributes : { totalDistance: BASE + totalDistance, ...attributes },
  };
}

interface Outcome {
  trips: ReturnType<typeof tripRow>[];
  stops: ReturnType<typeof stopRow>[];
  hours: HourSums[];
  state: SegmentationState;
}

/** Runs positions through the machine, the state going through JSON between positions as it does between rounds. */
function segment(positions: SegmentedPosition[], settings: EngineSettings = TRACCAR_TEST): Outcome {
  let state = initialSegmentationState();
  const segments: Segment[] = [];
  const hours: HourSums[] = [];
  for (const position of positions) {
    const result = step(JSON.parse(JSON.stringify(state)) as SegmentationState, position, settings);
    if (result.hourBegun && state.hour) hours.push(state.hour);
    segments.push(...result.closed);
    state = result.state;
  }
  if (state.hour) hours.push(state.hour);
  const ongoing = ongoingSegment(state);
  if (ongoing) segments.push(ongoing);
  return {
    trips: segments.filter((s) => s.kind === 'trip').map((s) => tripRow(DEVICE, s)),
    stops: segments.filter((s) => s.kind === 'stop').map((s) => stopRow(DEVICE, s)),
    hours,
    state,
  };
}

const times = (rows: { start_time: number; end_time: number; ongoing: number }[]) =>
  rows.map((row) => [new Date(row.start_time).toISOString().slice(11, 16), new Date(row.end_time).toISOString().slice(11, 16), row.ongoing]);

const SIMPLE = () => [at(1, 0, 0, 0), at(2, 1, 0, 0), at(3, 2, 10, 0), at(4, 3, 10, 1000), at(5, 4, 10, 2000), at(6, 5, 0, 3000), at(7, 15, 0, 3000), at(8, 25, 0, 3000)];

describe('segmentation: Traccar trip cases', () => {
  it('a simple trip and its stops', () => {
    const { trips, stops } = segment(SIMPLE());
    assert.deepEqual(times(trips), [['00:02', '00:05', 0]]);
    const [trip] = trips;
    assert.equal(trip!.end_time - trip!.start_time, 180_000);
    assert.equal(trip?.distance, 3000);
    assert.ok(Math.abs(trip!.average_speed - 32.4) < 0.01, `average ${trip?.average_speed}`);
    assert.equal(trip?.max_speed, 10);
    assert.deepEqual([trip?.start_position_id, trip?.end_position_id, trip?.start_odometer, trip?.end_odometer], [3, 6, BASE, BASE + 3000]);
    // The last stop is still going on: it ends at the latest position.
    assert.deepEqual(times(stops), [['00:00', '00:02', 0], ['00:05', '00:25', 1]]);
    assert.deepEqual(stops.map((stop) => stop.position_id), [1, 6]);
  });

  it('the same with ignition: off confirms the stop at once, the rows are the same', () => {
    const positions = SIMPLE();
    positions[5]!.attributes = { ...positions[5]!.attributes, ignition: false };
    const withIgnition = segment(positions, { ...TRACCAR_TEST, useIgnition: true });
    assert.deepEqual(withIgnition.trips, segment(SIMPLE()).trips);
    assert.deepEqual(withIgnition.stops, segment(SIMPLE()).stops);
    // Ignition off (reported again by the next position, as devices do) confirms the stop without waiting the parking minimum.
    positions[6]!.attributes = { ...positions[6]!.attributes, ignition: false };
    const early = segment(positions.slice(0, 7), { ...TRACCAR_TEST, useIgnition: true, minimalParkingDuration: 3600 });
    assert.deepEqual(times(early.trips), [['00:02', '00:05', 0]]);
    const withoutIgnition = segment(positions.slice(0, 7), { ...TRACCAR_TEST, minimalParkingDuration: 3600 });
    assert.deepEqual(times(withoutIgnition.trips), [['00:02', '00:15', 1]]);
  });

  it('speed fluctuation inside a trip does not split it', () => {
    const { trips, stops } = segment([
      at(1, 0, 0, 0), at(2, 1, 0, 0), at(3, 2, 10, 0), at(4, 3, 10, 1000), at(5, 4, 10, 2000), at(6, 5, 10, 3000),
      at(7, 6, 10, 4000), at(8, 7, 0, 5000), at(9, 8, 10, 6000), at(10, 9, 0, 7000), at(11, 19, 0, 7000), at(12, 29, 0, 7000),
    ]);
    assert.deepEqual(times(trips), [['00:02', '00:09', 0]]);
    assert.equal(trips[0]?.distance, 7000);
    assert.ok(Math.abs(trips[0]!.average_speed - 32.4) < 0.01);
    assert.deepEqual(times(stops), [['00:00', '00:02', 0], ['00:09', '00:29', 1]]);
  });

  it('a stop shorter than the parking minimum stays inside the trip', () => {
    const { trips } = segment([
      at(1, 0, 0, 0), at(2, 1, 10, 0), at(3, 2, 10, 1000), at(4, 3, 0, 2000), at(5, 5, 0, 2000), at(6, 6, 10, 2000),
      at(7, 7, 10, 3000), at(8, 8, 0, 4000), at(9, 20, 0, 4000),
    ]);
    assert.deepEqual(times(trips), [['00:01', '00:08', 0]]);
    assert.equal(trips[0]?.distance, 4000);
  });

  it('a gap without data ends the trip at the last position before it', () => {
    const { trips, stops } = segment([
      at(1, 0, 0, 0), at(2, 1, 10, 0), at(3, 2, 10, 1000), at(4, 3, 10, 2000),
      // 20 minutes of silence (over 900 s), then moving again.
      at(5, 23, 10, 9000), at(6, 24, 10, 10_000), at(7, 25, 10, 11_000), at(8, 26, 0, 12_000), at(9, 40, 0, 12_000),
    ]);
    assert.deepEqual(times(trips), [['00:01', '00:03', 0], ['00:24', '00:26', 0]]);
    assert.deepEqual(times(stops), [['00:00', '00:01', 0], ['00:03', '00:24', 0], ['00:26', '00:40', 1]]);
  });

  it('a trip crossing midnight is one trip; the hours on either side sum it', () => {
    const start = 23 * 60 + 50; // 23:50 on 1 January
    const positions = [at(1, start, 0, 0)];
    for (let minute = 1; minute <= 20; minute++) positions.push(at(minute + 1, start + minute, 20, minute * 600));
    positions.push(at(22, start + 21, 0, 12_600), at(23, start + 40, 0, 12_600));
    const { trips, hours } = segment(positions);
    assert.equal(trips.length, 1);
    assert.deepEqual([new Date(trips[0]!.start_time).toISOString(), new Date(trips[0]!.end_time).toISOString()], ['2016-01-01T23:51:00.000Z', '2016-01-02T00:11:00.000Z']);
    assert.equal(trips[0]?.distance, 12_000);
    assert.deepEqual(hours.map((hour) => new Date(hour.hourStart).toISOString()), ['2016-01-01T23:00:00.000Z', '2016-01-02T00:00:00.000Z']);
    assert.equal(hours.reduce((sum, hour) => sum + hour.distance, 0), 12_600);
    assert.deepEqual(hours.map((hour) => hour.positions), [10, 13]);
    assert.equal(hours[0]?.endOdometer, hours[1]!.startOdometer - 600);
  });
});

describe('segmentation: settings, distance and readings', () => {
  it('a device attribute overrides the deployment setting', () => {
    // 400 m in 4 minutes: no trip under the defaults (500 m, 300 s) …
    const crawl = [at(1, 0, 0, 0), at(2, 1, 5, 0), at(3, 2, 5, 100), at(4, 3, 5, 200), at(5, 4, 5, 400), at(6, 5, 0, 400), at(7, 30, 0, 400)];
    assert.deepEqual(segment(crawl, DEFAULT_ENGINE_SETTINGS).trips, []);
    // … one when the device lowers its minimal trip distance.
    const settings = effectiveSettings({ settings: DEFAULT_ENGINE_SETTINGS, deviceAttributes: { minimalTripDistance: 150 } });
    assert.deepEqual(times(segment(crawl, settings).trips), [['00:01', '00:05', 0]]);
    // A higher speed threshold (per device) sees no motion at 5 kn.
    const slow = effectiveSettings({ settings: DEFAULT_ENGINE_SETTINGS, deviceAttributes: { minimalTripDistance: 150, motionSpeedThreshold: 6 } });
    assert.deepEqual(segment(crawl, slow).trips, []);
    // useIgnition per device (a boolean attribute).
    assert.equal(effectiveSettings({ settings: DEFAULT_ENGINE_SETTINGS, deviceAttributes: { useIgnition: true } }).useIgnition, true);
  });

  it('distance from the odometer where reported, else great-circle steps between valid fixes', () => {
    const moving = (id: number, minutes: number, metres: number, attributes: Record<string, unknown>, valid = true): SegmentedPosition => ({
      ...at(id, minutes, 20, null, attributes),
      latitude: 10 + metres / METRES_PER_DEGREE,
      valid,
    });
    const route = (odometer: boolean) => [
      moving(1, 0, 0, odometer ? { odometer: 50_000 } : {}),
      moving(2, 1, 1000, odometer ? { odometer: 51_100 } : {}),
      // An invalid fix far away counts for nothing.
      moving(3, 2, 90_000, odometer ? { odometer: 52_000 } : {}, false),
      moving(4, 3, 3000, odometer ? { odometer: 53_300 } : {}),
      { ...moving(5, 4, 3000, odometer ? { odometer: 53_300 } : {}), speed: 0 },
      { ...moving(6, 30, 3000, odometer ? { odometer: 53_300 } : {}), speed: 0 },
    ];
    const [byOdometer] = segment(route(true), DEFAULT_ENGINE_SETTINGS).trips;
    assert.deepEqual([byOdometer?.distance, byOdometer?.start_odometer, byOdometer?.end_odometer], [3300, 50_000, 53_300]);
    const [byGreatCircle] = segment(route(false), DEFAULT_ENGINE_SETTINGS).trips;
    assert.ok(Math.abs(byGreatCircle!.distance - 3000) < 0.01, `distance ${byGreatCircle?.distance}`);
    assert.equal(byGreatCircle?.start_odometer, 0);
  });

  it('fuel, engine hours and the driver from the attributes where reported', () => {
    const { trips, stops } = segment([
      at(1, 0, 0, 0, { fuel: 60, hours: 1_000_000 }),
      at(2, 1, 10, 0, { fuel: 60, hours: 1_000_000, driverUniqueId: 'D-7' }),
      at(3, 2, 10, 1000, { fuel: 59 }),
      at(4, 3, 0, 2000, { fuel: 58, hours: 1_180_000 }),
      at(5, 20, 0, 2000, { fuel: 58, hours: 1_180_000 }),
    ]);
    assert.deepEqual([trips[0]?.spent_fuel, trips[0]?.driver_unique_id], [2, 'D-7']);
    assert.deepEqual(stops.map((stop) => [stop.engine_hours, stop.spent_fuel]), [[0, 0], [0, 0]]);
    const silent = segment(SIMPLE());
    assert.deepEqual([silent.trips[0]?.spent_fuel, silent.trips[0]?.driver_unique_id, silent.stops[0]?.engine_hours], [null, null, null]);
  });
});
