import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { EventBus } from '../../../../src/platform/bus.ts';
import type { DeviceStatusChange } from '../../../../src/services/devices/access.ts';
import type { NewEvent, NewPosition } from '../../../../src/services/tracking/api.ts';
import type { LivePosition } from '../../../../src/services/tracking/domain-events.ts';
import { GeofenceLimits } from '../../../../src/services/tracking/ingest/geofence-limits.ts';
import { IngestPipeline } from '../../../../src/services/tracking/ingest/pipeline.ts';
import { engineSettings } from '../../../../src/services/tracking/ingest/settings.ts';
import { DeviceRefusedError } from '../../../../src/services/tracking/ingest/sink.ts';
import type { DecodedMessage } from '../../../../src/services/tracking/protocols/types.ts';
import { deviceRecord } from '../../../factories/device.ts';
import { storedRow } from '../../../factories/position.ts';
import { FakeClock } from '../support/fake-clock.ts';

const STATUS_TIMEOUT_S = 600;
const WRITE_INTERVAL_MS = 1_000;

/**
 * A pipeline over storage and a devices module held in memory, on a fake clock. Position writes
 * and device field writes can be held (`holdWrites`, `holdStatusWrites`) to act while one is in flight.
 */
function fakePipeline(deviceIds: number[]) {
  const clock = new FakeClock();
  const records = new Map(deviceIds.map((id) => [id, deviceRecord(id)]));
  const positions: NewPosition[] = [];
  const events: NewEvent[] = [];
  const statusWrites: DeviceStatusChange[][] = [];
  const live: LivePosition[] = [];
  let held: (() => void)[] | undefined;
  let heldStatuses: (() => void)[] | undefined;
  const bus = new EventBus(pino({ level: 'silent' }));
  bus.on('tracking.positions.stored', ({ positions: stored }) => {
    live.push(...stored);
  });
  const pipeline = new IngestPipeline({
    storage: {
      async storePositions(batch) {
        if (held) await new Promise<void>((resolve) => held?.push(resolve));
        const rows = batch.map((position) => {
          positions.push(position);
          return storedRow(position, positions.length);
        });
        return { rows, moved: rows.map((row) => ({ device_id: row.device_id, position_id: row.id, fix_time: row.fix_time, server_time: row.server_time })) };
      },
      storeEvents(batch) {
        events.push(...batch);
        return Promise.resolve(batch.map((_, index) => events.length - batch.length + index + 1));
      },
      latestPosition: () => Promise.resolve(undefined),
      devicesWithPositions: () => Promise.resolve([]),
    },
    devices: {
      findByUniqueId: (uniqueId) => Promise.resolve([...records.values()].find((record) => record.uniqueId === uniqueId)),
      getDevices: (ids) => Promise.resolve(ids.flatMap((id) => records.get(id) ?? [])),
      async updateStatuses(batch) {
        if (heldStatuses) await new Promise<void>((resolve) => heldStatuses?.push(resolve));
        statusWrites.push(batch.map((change) => ({ ...change })));
        return batch.map((change) => change.deviceId);
      },
    },
    geofences: new GeofenceLimits({ containing: () => Promise.resolve([]), load: () => Promise.resolve([]) }),
    bus,
    log: pino({ level: 'silent' }),
    settings: engineSettings({}),
    statusTimeout: STATUS_TIMEOUT_S,
    batchSize: 1000,
    batchDelayMs: 0,
    deviceWriteIntervalMs: WRITE_INTERVAL_MS,
    clock,
  });
  const fix = (latitude: number): DecodedMessage => ({
    positions: [{ fixTime: new Date(clock.now()), deviceTime: null, valid: true, latitude, longitude: 13.4, altitude: 0, speed: 0, course: 0, accuracy: 0, attributes: {} }],
    statuses: [],
  });
  const connect = async (id: number) => {
    const device = await pipeline.identify(`fake-${id}`);
    assert.ok(device);
    pipeline.connected(device);
    return device;
  };
  return {
    clock, pipeline, records, positions, events, statusWrites, live, fix, connect,
    holdWrites: () => {
      held = [];
    },
    releaseWrites: () => {
      for (const resolve of held ?? []) resolve();
      held = undefined;
    },
    holdStatusWrites: () => {
      heldStatuses = [];
    },
    releaseStatusWrites: () => {
      for (const resolve of heldStatuses ?? []) resolve();
      heldStatuses = undefined;
    },
    /** Lets the work under way go on: writes and effects rounds start on later turns of the event loop. */
    turn: async () => {
      for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

describe('ingestion pipeline over fake storage', () => {
  it('a device deleted while its write is in flight: the write is acknowledged, then nothing of it is written, published or accepted', async () => {
    const fake = fakePipeline([1]);
    const device = await fake.connect(1);
    fake.holdWrites();
    const accepted = fake.pipeline.accept(device, 'osmand', fake.fix(52.5), new Date(fake.clock.now()));
    await fake.turn();
    let forgotten = false;
    const forgetting = fake.pipeline.forgetDevice(1).then(() => {
      forgotten = true;
    });
    await fake.turn();
    assert.equal(forgotten, false, 'deletion waits for the write in flight');
    fake.releaseWrites();
    await accepted;
    await forgetting;
    await fake.pipeline.settled();

    assert.equal(fake.positions.length, 1, 'the write in flight committed');
    assert.deepEqual(fake.statusWrites, [], 'no device field written for it after the deletion');
    assert.deepEqual(fake.live, [], 'nothing published for it');
    assert.deepEqual(fake.events, [], 'no event for it (deviceOnline was pending)');
    await assert.rejects(fake.pipeline.accept(device, 'osmand', fake.fix(52.6), new Date(fake.clock.now())), DeviceRefusedError);
    fake.pipeline.disconnected(device);
    await fake.pipeline.settled();
    assert.equal(fake.positions.length, 1);
    assert.deepEqual(fake.statusWrites, []);
  });

  it('the status-timeout sweep: an online device silent for STATUS_TIMEOUT becomes unknown, once, with deviceUnknown', async () => {
    const fake = fakePipeline([1]);
    const device = await fake.connect(1);
    const sentAt = fake.clock.now();
    await fake.pipeline.accept(device, 'osmand', fake.fix(52.5), new Date(sentAt));
    await fake.pipeline.settled();
    assert.deepEqual(fake.statusWrites[0], [{ deviceId: 1, status: 'online', lastUpdate: sentAt, positionId: 1 }], 'written before the ACK');
    assert.deepEqual(fake.events.map((event) => event.type), ['deviceOnline']);

    fake.clock.advance(STATUS_TIMEOUT_S * 1000);
    fake.pipeline.sweep();
    await fake.pipeline.settled();
    assert.equal(fake.statusWrites.length, 1, 'exactly STATUS_TIMEOUT: not yet');

    fake.clock.advance(1);
    fake.pipeline.sweep();
    await fake.pipeline.settled();
    assert.deepEqual(fake.statusWrites.slice(1), [[{ deviceId: 1, status: 'unknown' }]]);
    assert.deepEqual(fake.events.map((event) => [event.type, event.eventTime]), [['deviceOnline', sentAt], ['deviceUnknown', fake.clock.now()]]);

    fake.clock.advance(STATUS_TIMEOUT_S * 1000);
    fake.pipeline.sweep();
    await fake.pipeline.settled();
    assert.equal(fake.statusWrites.length, 2, 'an unknown device stays so without another write');
    assert.equal(fake.events.length, 2);
  });

  it('status changes no message carries are merged: written at once, then at most once per interval, all together', async () => {
    const fake = fakePipeline([1, 2, 3]);
    const devices = await Promise.all([1, 2, 3].map((id) => fake.connect(id)));
    for (const device of devices) await fake.pipeline.accept(device, 'osmand', fake.fix(52.5), new Date(fake.clock.now()));
    await fake.pipeline.settled();
    // The accepted messages' own fields may have gone through the status writer: its interval starts over.
    fake.clock.advance(WRITE_INTERVAL_MS);
    const before = fake.statusWrites.length;

    fake.pipeline.disconnected(devices[0]!);
    await fake.turn();
    assert.deepEqual(fake.statusWrites.slice(before), [[{ deviceId: 1, status: 'offline' }]], 'the first at once');

    fake.clock.advance(WRITE_INTERVAL_MS / 2);
    fake.pipeline.disconnected(devices[1]!);
    fake.pipeline.disconnected(devices[2]!);
    await fake.turn();
    assert.equal(fake.statusWrites.length, before + 1, 'within the interval: held back');

    fake.clock.advance(WRITE_INTERVAL_MS / 2);
    await fake.turn();
    assert.deepEqual(fake.statusWrites.slice(before + 1), [[{ deviceId: 2, status: 'offline' }, { deviceId: 3, status: 'offline' }]], 'one write, both');
    assert.deepEqual(fake.events.filter((event) => event.type === 'deviceOffline').map((event) => event.deviceId), [1, 2, 3]);
  });

  it('a message with nothing to store, whose fields the status writer took while it waited, is acknowledged only once they are written', async () => {
    const fake = fakePipeline([1, 2]);
    const [device, other] = [await fake.connect(1), await fake.connect(2)];
    await fake.pipeline.settled();
    fake.clock.advance(WRITE_INTERVAL_MS);
    fake.holdWrites();
    let acknowledged = false;
    const accepted = fake.pipeline.accept(device, 'ruptela', { positions: [], statuses: [] }, new Date(fake.clock.now())).then(() => {
      acknowledged = true;
    });
    await fake.turn();
    // Another device goes offline meanwhile: the status writer runs at once and takes device 1's fields with it.
    fake.holdStatusWrites();
    fake.pipeline.disconnected(other);
    await fake.turn();
    fake.releaseWrites();
    await fake.turn();
    assert.equal(acknowledged, false, 'not acknowledged while its status is still being written');
    fake.releaseStatusWrites();
    await accepted;
    assert.deepEqual(
      fake.statusWrites.flat().filter((change) => change.deviceId === 1),
      [{ deviceId: 1, status: 'online', lastUpdate: fake.clock.now() }],
      'its fields went once, with the status writer',
    );
  });
});
