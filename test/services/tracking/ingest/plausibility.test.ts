import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Counter } from 'prom-client';
import { request } from 'undici';
import { crc16Ibm, crc16Kermit, crc16X25 } from '../../../../src/services/tracking/protocols/checksum.ts';
import { gt06Location } from '../../../../src/services/tracking/protocols/gt06/simulator.ts';
import { jt808Location } from '../../../../src/services/tracking/protocols/jt808/simulator.ts';
import { osmAndQuery } from '../../../../src/services/tracking/protocols/osmand/simulator.ts';
import { ruptelaRecords } from '../../../../src/services/tracking/protocols/ruptela/simulator.ts';
import { teltonikaAvlPacket } from '../../../../src/services/tracking/protocols/teltonika/simulator.ts';
import { tk103Location } from '../../../../src/services/tracking/protocols/tk103/simulator.ts';
import { JT808_MESSAGES, jt808Header, jt808Message } from '../../../../src/services/tracking/protocols/jt808/decoder.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { DeviceConnection, deviceOf, eventsOf, fixAt, latestOf, positionsOf, registerDevice } from './support.ts';
import { TCP_PROTOCOLS } from './tcp-protocols.ts';
import type { TcpProtocolCase } from './tcp-protocols.ts';

const DAY_MS = 86_400_000;

/**
 * A real position frame whose course field carries `course`, out of the range the encoders write:
 * the course bytes (or text) of the encoder's frame replaced, and its checksum made right again.
 */
const IMPOSSIBLE_COURSES: readonly { protocol: TcpProtocolCase['protocol']; course: number; frame(uniqueId: string): Buffer }[] = [
  {
    // `…hhmmss<course 6>…`: the text field read as it stands.
    protocol: 'tk103',
    course: 90_000,
    frame: (uniqueId) => Buffer.from(tk103Location(uniqueId, fixAt(0, { course: 90 }), 'BP05').toString('latin1').replace('090.00', '90000.'), 'latin1'),
  },
  {
    // The basic location's course word (body offset 20), the message built again around it.
    protocol: 'jt808',
    course: 65_370,
    frame: (uniqueId) => {
      const raw = Buffer.from(jt808Location(uniqueId, fixAt(0), 3).toString('hex').replace(/7d02/g, '7e').replace(/7d01/g, '7d'), 'hex');
      const bodyLength = raw.readUInt16BE(3) & 0x3ff;
      const body = Buffer.from(raw.subarray(raw.length - 2 - bodyLength, raw.length - 2));
      body.writeUInt16BE(65_370, 20);
      return jt808Message(jt808Header(uniqueId), JT808_MESSAGES.location, body, 3);
    },
  },
  {
    // The record's angle word (frame offset 29), then the CRC over the data.
    protocol: 'teltonika',
    course: 10_842,
    frame: () => {
      const frame = teltonikaAvlPacket([fixAt(0)]);
      frame.writeUInt16BE(10_842, 29);
      frame.writeUInt32BE(crc16Ibm(frame.subarray(8, frame.length - 4)), frame.length - 4);
      return frame;
    },
  },
  {
    // The 10 course bits of the course-status word (frame offset 20), then the CRC-ITU.
    protocol: 'gt06',
    course: 816,
    frame: () => {
      const frame = gt06Location(fixAt(0), 3);
      frame.writeUInt16BE((frame.readUInt16BE(20) & 0xfc00) | 816, 20);
      frame.writeUInt16BE(crc16X25(frame.subarray(2, frame.length - 4)), frame.length - 4);
      return frame;
    },
  },
  {
    // The record's course in hundredths (frame offset 29), then the CRC over the data.
    protocol: 'ruptela',
    course: 653,
    frame: (uniqueId) => {
      const frame = ruptelaRecords(uniqueId, [fixAt(0)]);
      frame.writeUInt16BE(65_300, 29);
      frame.writeUInt16BE(crc16Kermit(frame.subarray(2, frame.length - 2)), frame.length - 2);
      return frame;
    },
  },
];

describeEachEngine('plausibility on every path: impossible values normalised and counted, no fix never stored', (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  let osmand: string;
  const ports = new Map<string, number>();

  before(async () => {
    server = await startTestServer(engine);
    owner = await server.login({ email: 'plausibility-owner@example.com' });
    const ingestion = server.tracking!.ingestion;
    for (const { protocol } of IMPOSSIBLE_COURSES) ports.set(protocol, await ingestion.listen(protocol, 0));
    osmand = `http://127.0.0.1:${await ingestion.listen('osmand', 0)}`;
  });
  after(() => server.dispose());

  const implausible = async (protocol: string, reason: string): Promise<number> => {
    const counter = server.metrics.getSingleMetric('trackstack_ingest_implausible_values_total') as Counter | undefined;
    assert.ok(counter, 'the counter is registered');
    const { values } = await counter.get();
    return values.find((sample) => sample.labels.protocol === protocol && sample.labels.reason === reason)?.value ?? 0;
  };
  const send = async (query: string) => {
    const response = await request(`${osmand}/?${query}`);
    const text = await response.body.text();
    return { status: response.statusCode, body: text ? (JSON.parse(text) as { code?: string; error?: string; message?: string }) : undefined };
  };
  const everything = (deviceId: number) => positionsOf(server, owner, deviceId, 0, Date.now() + 2 * DAY_MS);

  describe('a course past 360° in a real frame over a real socket is stored as 0 and counted; the fix is kept', () => {
    for (const [n, { protocol, course, frame }] of IMPOSSIBLE_COURSES.entries()) {
      it(`${protocol}: course ${course}`, async () => {
        const row = TCP_PROTOCOLS.find((candidate) => candidate.protocol === protocol)!;
        const uniqueId = row.uniqueId(900 + n);
        const deviceId = await registerDevice(server, owner, uniqueId);
        const before = await implausible(protocol, 'course_out_of_range');
        const connection = await DeviceConnection.open(ports.get(protocol)!);
        const login = row.login(uniqueId);
        if (login) {
          connection.write(login);
          await row.readLoginAccepted(connection);
        }
        connection.write(frame(uniqueId));
        await row.readPositionAck!(connection, 3);
        const [stored] = await positionsOf(server, owner, deviceId);
        assert.ok(stored, 'the position is stored');
        assert.equal(stored.course, 0);
        assert.equal(stored.fixTime, fixAt(0).time.toISOString());
        assert.ok(Math.abs(stored.latitude - 52.5) < 1e-4 && Math.abs(stored.longitude - 13.4) < 1e-4, `${stored.latitude},${stored.longitude}`);
        assert.equal(await implausible(protocol, 'course_out_of_range') - before, 1);
        await connection.close();
      });
    }
  });

  it('OsmAnd: a negative speed and a bearing past 360 are stored as 0 and counted; 360 is north', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-negative-speed');
    const speedBefore = await implausible('osmand', 'negative_speed');
    const courseBefore = await implausible('osmand', 'course_out_of_range');
    assert.equal((await send(`${osmAndQuery('phone-negative-speed', fixAt(0))}&speed=-180&bearing=400`)).status, 200);
    assert.equal((await send(`${osmAndQuery('phone-negative-speed', fixAt(1))}&bearing=360`)).status, 200);
    assert.equal((await send(`${osmAndQuery('phone-negative-speed', fixAt(2))}&bearing=-1`)).status, 200);
    const stored = await positionsOf(server, owner, deviceId);
    assert.deepEqual(stored.map((position) => [position.speed, position.course]), [[0, 0], [10, 0], [10, 0]]);
    assert.equal(await implausible('osmand', 'negative_speed') - speedBefore, 1);
    assert.equal(await implausible('osmand', 'course_out_of_range') - courseBefore, 2, '400 and -1; 360 is not counted');
  });

  it('OsmAnd: an id with no other field answers 400 BAD_REQUEST, stores nothing and leaves the device as it was', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-id-only');
    for (const query of ['id=phone-id-only', 'id=phone-id-only&timestamp=1700000000']) {
      const reply = await send(query);
      assert.equal(reply.status, 400, query);
      assert.deepEqual([reply.body?.code, reply.body?.error], ['BAD_REQUEST', 'Bad Request']);
      assert.match(reply.body?.message ?? '', /no location and no value/);
    }
    assert.deepEqual(await everything(deviceId), []);
    const device = await deviceOf(server, owner, deviceId);
    assert.deepEqual([device.status, device.lastUpdate, device.positionId], ['offline', null, null]);
  });

  it('OsmAnd: a fix dated 1970 (timestamp=0) answers 400 and stores nothing', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-1970');
    const reply = await send('id=phone-1970&lat=52.5&lon=13.4&timestamp=0');
    assert.equal(reply.status, 400);
    assert.equal(reply.body?.code, 'BAD_REQUEST');
    assert.match(reply.body?.message ?? '', /1970-01-01T00:00:00.000Z is before 2000/);
    assert.deepEqual(await everything(deviceId), []);
  });

  it('a report before the first fix is not stored at 0,0 in 1970, counted; its alarm still raises the event, with no position', async () => {
    const deviceId = await registerDevice(server, owner, 'phone-before-fix');
    const before = await implausible('osmand', 'no_fix');
    assert.equal((await send('id=phone-before-fix&batt=40&alarm=sos')).status, 200);
    assert.deepEqual(await everything(deviceId), []);
    const device = await deviceOf(server, owner, deviceId);
    assert.deepEqual([device.status, device.positionId], ['online', null]);
    assert.ok(device.lastUpdate, 'the device was heard');
    assert.equal(await implausible('osmand', 'no_fix') - before, 1);
    await server.tracking!.ingestion.pipeline.settled();
    const alarms = (await eventsOf(server, owner, deviceId)).filter((event) => event.type === 'alarm');
    assert.deepEqual(alarms.map((event) => [event.attributes.alarm, event.positionId]), [['sos', null]]);

    // Once there is a fix, a report without a location is placed at it.
    assert.equal((await send(osmAndQuery('phone-before-fix', fixAt(5)))).status, 200);
    assert.equal((await send('id=phone-before-fix&batt=39')).status, 200);
    const stored = await everything(deviceId);
    assert.deepEqual(stored.map((position) => [position.fixTime, position.attributes.batteryLevel]), [
      [fixAt(5).time.toISOString(), undefined],
      [fixAt(5).time.toISOString(), 39],
    ]);
    assert.equal((await latestOf(server, owner, deviceId))?.id, stored[1]?.id);
  });
});
