import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { request } from 'undici';
import { gl200Heartbeat, gl200Location } from '../../../../src/services/tracking/protocols/gl200/simulator.ts';
import { gps103Heartbeat, gps103Location } from '../../../../src/services/tracking/protocols/gps103/simulator.ts';
import { gt06Location, gt06Login } from '../../../../src/services/tracking/protocols/gt06/simulator.ts';
import { h02Location } from '../../../../src/services/tracking/protocols/h02/simulator.ts';
import { jt808Location, jt808LocationBatch } from '../../../../src/services/tracking/protocols/jt808/simulator.ts';
import { teltonikaAvlPacket, teltonikaHandshake } from '../../../../src/services/tracking/protocols/teltonika/simulator.ts';
import { DEVICE_PROTOCOLS } from '../../../../src/services/tracking/protocols/registry.ts';
import type { DeviceProtocol } from '../../../../src/services/tracking/protocols/registry.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { DeviceConnection, deviceOf, fixAt, latestOf, positionsOf, registerDevice, waitFor } from './support.ts';
import { identification, readJt808, TCP_PROTOCOLS } from './tcp-protocols.ts';

const ACK_ONE = Buffer.from([0, 0, 0, 1]);
const ACCEPTED = Buffer.from([1]);
/** A GT06 heartbeat (0x13 status) with serial 0x01BA, from Traccar's tests; its ack is 10 bytes. */
const GT06_HEARTBEAT = Buffer.from('78780a13440604000201baaf540d0a', 'hex');
const DAY_MS = 86_400_000;

describeEachEngine('device TCP listeners, end to end', (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  const ports = Object.fromEntries(DEVICE_PROTOCOLS.map((name) => [name, 0])) as Record<DeviceProtocol, number>;

  before(async () => {
    server = await startTestServer(engine);
    owner = await server.login({ email: 'tcp-owner@example.com' });
    const ingestion = server.tracking!.ingestion;
    for (const row of TCP_PROTOCOLS) ports[row.protocol] = await ingestion.listen(row.protocol, 0);
    ports.osmand = await ingestion.listen('osmand', 0);
  });
  after(() => server.dispose());

  const everything = (deviceId: number) => positionsOf(server, owner, deviceId, 0, Date.now() + 2 * DAY_MS);

  describe('every TCP protocol', () => {
    for (const row of TCP_PROTOCOLS) {
      describe(row.protocol, () => {
        const port = () => ports[row.protocol];

        /** The answer to position message `serial`, or where the protocol has none, the `count`-th position stored. */
        const confirmed = async (connection: DeviceConnection, serial: number, deviceId: number, count: number) => {
          if (row.readPositionAck) await row.readPositionAck(connection, serial);
          else await waitFor(() => everything(deviceId), (stored) => stored.length >= count, `position ${count} stored`);
        };

        /** A registered device of this protocol, logged in on a fresh connection. */
        async function loggedIn(n: number): Promise<{ deviceId: number; uniqueId: string; connection: DeviceConnection }> {
          const uniqueId = row.uniqueId(n);
          const deviceId = await registerDevice(server, owner, uniqueId);
          const connection = await DeviceConnection.open(port());
          const login = row.login(uniqueId);
          if (login) {
            connection.write(login);
            await row.readLoginAccepted(connection);
          }
          return { deviceId, uniqueId, connection };
        }

        it('accepts a known device, acknowledges its position once stored, readable through the API at once', async () => {
          const { deviceId, uniqueId, connection } = await loggedIn(1);
          connection.write(row.position(uniqueId, fixAt(1), 2));
          await confirmed(connection, 2, deviceId, 1);
          const stored = await positionsOf(server, owner, deviceId);
          assert.deepEqual(stored.map((position) => [position.protocol, position.fixTime, position.latitude]), [[row.protocol, fixAt(1).time.toISOString(), 52.5]]);
          await connection.close();
        });

        it('keeps a message whose checksum does not match, as Traccar does, and acknowledges it once stored', { skip: !row.spoilChecksum }, async () => {
          const { deviceId, uniqueId, connection } = await loggedIn(8);
          connection.write(row.spoilChecksum!(row.position(uniqueId, fixAt(8), 3)));
          await confirmed(connection, 3, deviceId, 1);
          const stored = await positionsOf(server, owner, deviceId);
          assert.deepEqual(stored.map((position) => [position.fixTime, position.latitude]), [[fixAt(8).time.toISOString(), 52.5]]);
          await connection.close();
        });

        it('reassembles frames delivered a few bytes at a time', async () => {
          const uniqueId = row.uniqueId(2);
          const deviceId = await registerDevice(server, owner, uniqueId);
          const connection = await DeviceConnection.open(port());
          const login = row.login(uniqueId) ?? Buffer.alloc(0);
          await connection.trickle(Buffer.concat([login, row.position(uniqueId, fixAt(10), 2)]), 3);
          await row.readLoginAccepted(connection);
          await confirmed(connection, 2, deviceId, 1);
          assert.equal((await positionsOf(server, owner, deviceId)).length, 1);
          await connection.close();
        });

        it('refuses an unknown device and closes', async () => {
          const connection = await DeviceConnection.open(port());
          connection.write(identification(row, row.uniqueId(9999), fixAt(1)));
          await connection.assertClosed();
          assert.deepEqual(connection.unread, row.refusal);
        });

        it('refuses a disabled device, storing nothing', async () => {
          const uniqueId = row.uniqueId(3);
          const deviceId = await registerDevice(server, owner, uniqueId);
          const disabled = await server.app.inject({ method: 'PUT', url: `/api/devices/${deviceId}`, headers: owner.authorization, payload: { disabled: true } });
          assert.equal(disabled.statusCode, 200, disabled.body);
          const connection = await DeviceConnection.open(port());
          connection.write(identification(row, uniqueId, fixAt(1)));
          await connection.assertClosed();
          assert.deepEqual(connection.unread, row.refusal);
          assert.deepEqual(await everything(deviceId), []);
        });

        it('closes on garbage, before and after the login', async () => {
          const before = await DeviceConnection.open(port());
          before.write(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
          await before.assertClosed();

          const { deviceId, connection } = await loggedIn(4);
          connection.write(Buffer.from('this is not a tracker message'));
          await connection.assertClosed();
          assert.deepEqual(await everything(deviceId), []);
        });

        it('after the login answer and after each ACK, the device shows the message at once', async () => {
          const { deviceId, uniqueId, connection } = await loggedIn(5);
          if (row.login(uniqueId)) {
            const online = await deviceOf(server, owner, deviceId);
            assert.equal(online.status, 'online');
            assert.notEqual(online.lastUpdate, null);
          }
          const shown = async () => {
            const [device, latest] = await Promise.all([deviceOf(server, owner, deviceId), latestOf(server, owner, deviceId)]);
            return { status: device.status, positionId: device.positionId, latest };
          };
          for (let seconds = 0; seconds < 20; seconds++) {
            connection.write(row.position(uniqueId, fixAt(seconds), seconds + 2));
            const expectedTime = fixAt(seconds).time.toISOString();
            let seen: Awaited<ReturnType<typeof shown>>;
            if (row.readPositionAck) {
              await row.readPositionAck(connection, seconds + 2);
              seen = await shown();
            } else {
              // Without an answer there is no moment at which the device was told: the position shows up eventually.
              seen = await waitFor(shown, (state) => state.latest?.fixTime === expectedTime && state.positionId === state.latest?.id, `record ${seconds}`);
            }
            assert.equal(seen.latest?.fixTime, expectedTime);
            assert.deepEqual([seen.status, seen.positionId], ['online', seen.latest?.id], `record ${seconds}`);
          }
          await connection.close();
        });

        it('keeps an out-of-order position but does not make it the latest', async () => {
          const { deviceId, uniqueId, connection } = await loggedIn(6);
          connection.write(row.position(uniqueId, fixAt(100), 2));
          await confirmed(connection, 2, deviceId, 1);
          connection.write(row.position(uniqueId, fixAt(50), 3));
          await confirmed(connection, 3, deviceId, 2);
          assert.equal((await positionsOf(server, owner, deviceId)).length, 2);
          assert.equal((await latestOf(server, owner, deviceId))?.fixTime, fixAt(100).time.toISOString());
          await connection.close();
        });

        it('survives random and mutated frames: no crash, no hang, nothing stored from garbage, the listener goes on', async () => {
          const uniqueId = row.uniqueId(7);
          const deviceId = await registerDevice(server, owner, uniqueId);
          const valid = row.position(uniqueId, fixAt(1), 2);
          const garbage = fc.sample(fc.uint8Array({ minLength: 1, maxLength: 300 }), { numRuns: 15, seed: 17 });
          const mutated = fc.sample(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }), { numRuns: 15, seed: 18 })
            .map((changes) => {
              const frame = Buffer.from(valid);
              for (const [index, value] of changes) frame[index % frame.length] = value;
              return frame;
            });
          const send = async (bytes: Buffer, stored: 'nothing' | 'anything') => {
            const before = (await everything(deviceId)).length;
            const connection = await DeviceConnection.open(port());
            connection.write(Buffer.concat([row.login(uniqueId) ?? Buffer.alloc(0), bytes]));
            // Whatever it made of the bytes, the server answers or closes; the device hanging up ends the rest.
            await new Promise((resolve) => setTimeout(resolve, 20));
            await connection.close();
            if (stored === 'nothing') assert.equal((await everything(deviceId)).length, before, `garbage ${bytes.toString('hex')} stored a position`);
          };
          for (const bytes of garbage) await send(Buffer.from(bytes), 'nothing');
          for (const frame of mutated) await send(frame, 'anything');
          const storedBefore = (await everything(deviceId)).length;
          const after = await DeviceConnection.open(port());
          after.write(Buffer.concat([row.login(uniqueId) ?? Buffer.alloc(0), row.position(uniqueId, fixAt(500), 3)]));
          await row.readLoginAccepted(after);
          await confirmed(after, 3, deviceId, storedBefore + 1);
          await after.close();
        });
      });
    }
  });

  describe('Teltonika', () => {
    it('accepts a known IMEI, acknowledges each packet with its record count once stored', async () => {
      const deviceId = await registerDevice(server, owner, '356307042441001');
      const connection = await DeviceConnection.open(ports.teltonika);
      connection.write(teltonikaHandshake('356307042441001'));
      assert.deepEqual(await connection.read(1), ACCEPTED);
      connection.write(teltonikaAvlPacket([fixAt(0), fixAt(1, { ignition: true })]));
      assert.deepEqual(await connection.read(4), Buffer.from([0, 0, 0, 2]));
      // Acknowledged means stored: readable at once.
      const stored = await positionsOf(server, owner, deviceId);
      assert.deepEqual(stored.map((position) => [position.protocol, position.fixTime, position.attributes.ignition]), [
        ['teltonika', fixAt(0).time.toISOString(), undefined],
        ['teltonika', fixAt(1).time.toISOString(), true],
      ]);
      assert.equal(stored[0]?.latitude, 52.5);
      assert.equal(stored[0]?.altitude, 40);
      assert.ok(Math.abs((stored[0]?.speed ?? 0) - 10) < 0.3, 'km/h on the wire, knots stored');
      await connection.close();
    });

    it('handles the handshake and several packets in one write, acknowledging each in order', async () => {
      const deviceId = await registerDevice(server, owner, '356307042441003');
      const connection = await DeviceConnection.open(ports.teltonika);
      connection.write(
        Buffer.concat([
          teltonikaHandshake('356307042441003'),
          teltonikaAvlPacket([fixAt(20)]),
          Buffer.from([0xff]), // keep-alive ping
          teltonikaAvlPacket([fixAt(21), fixAt(22), fixAt(23)]),
        ]),
      );
      assert.deepEqual(await connection.read(9), Buffer.concat([ACCEPTED, ACK_ONE, Buffer.from([0, 0, 0, 3])]));
      assert.equal((await positionsOf(server, owner, deviceId)).length, 4);
      await connection.close();
    });

    it('closes a connection that announces a packet larger than the buffer limit', async () => {
      await registerDevice(server, owner, '356307042441007');
      const connection = await DeviceConnection.open(ports.teltonika);
      connection.write(teltonikaHandshake('356307042441007'));
      assert.deepEqual(await connection.read(1), ACCEPTED);
      // A declared length of 65 000 bytes, then more bytes than the listener holds for one frame.
      const header = Buffer.alloc(8);
      header.writeUInt32BE(65_000, 4);
      connection.write(Buffer.concat([header, Buffer.alloc(64 * 1024)]));
      await connection.assertClosed();
    });

    it('closes without an ACK on a record dated more than a day ahead, storing nothing; the device then goes on', async () => {
      const deviceId = await registerDevice(server, owner, '356307042441009');
      const poisoned = await DeviceConnection.open(ports.teltonika);
      poisoned.write(teltonikaHandshake('356307042441009'));
      assert.deepEqual(await poisoned.read(1), ACCEPTED);
      poisoned.write(teltonikaAvlPacket([fixAt(0, { time: new Date(Date.now() + 2 * DAY_MS) })]));
      await poisoned.assertClosed();
      assert.equal(poisoned.unread.length, 0, 'no ACK');
      assert.deepEqual(await everything(deviceId), []);

      const next = await DeviceConnection.open(ports.teltonika);
      next.write(Buffer.concat([teltonikaHandshake('356307042441009'), teltonikaAvlPacket([fixAt(1)])]));
      assert.deepEqual(await next.read(5), Buffer.concat([ACCEPTED, ACK_ONE]));
      assert.deepEqual((await everything(deviceId)).map((position) => position.fixTime), [fixAt(1).time.toISOString()]);
      await next.close();
    });
  });

  describe('GT06', () => {
    it('acknowledges the login of a known device and each location once stored', async () => {
      const deviceId = await registerDevice(server, owner, '359710049095001');
      const connection = await DeviceConnection.open(ports.gt06);
      connection.write(gt06Login('359710049095001', 1));
      const loginAck = await connection.read(10);
      assert.deepEqual([loginAck[3], loginAck.readUInt16BE(4)], [0x01, 1]);
      // Two locations in one write, the second split across writes.
      const second = gt06Location(fixAt(2, { ignition: true, odometer: 5000 }), 3);
      connection.write(Buffer.concat([gt06Location(fixAt(1), 2), second.subarray(0, 7)]));
      const firstAck = await connection.read(10);
      assert.deepEqual([firstAck[3], firstAck.readUInt16BE(4)], [0x22, 2]);
      connection.write(second.subarray(7));
      const secondAck = await connection.read(10);
      assert.equal(secondAck.readUInt16BE(4), 3);
      const stored = await positionsOf(server, owner, deviceId);
      assert.deepEqual(stored.map((position) => [position.protocol, position.attributes.ignition, position.attributes.odometer]), [
        ['gt06', false, undefined],
        ['gt06', true, 5000],
      ]);
      await connection.close();
    });

    it('a refused OsmAnd report leaves the device whole: its GT06 heartbeat after it is acknowledged and stored', async () => {
      const deviceId = await registerDevice(server, owner, '359710049095003');
      const poison = await request(`http://127.0.0.1:${ports.osmand}/?id=359710049095003&lat=52.5&lon=13.4&speed=1e309&timestamp=8640000000000000`);
      assert.equal(poison.statusCode, 400);
      await poison.body.dump();
      const connection = await DeviceConnection.open(ports.gt06);
      connection.write(gt06Login('359710049095003', 1));
      await connection.read(10);
      connection.write(gt06Location(fixAt(1), 2));
      await connection.read(10);
      connection.write(GT06_HEARTBEAT);
      const ack = await connection.read(10);
      assert.deepEqual([ack[3], ack.readUInt16BE(4)], [0x13, 0x01ba]);
      const [fix, status] = await everything(deviceId);
      assert.deepEqual([status?.protocol, status?.fixTime, status?.attributes.status], ['gt06', fix?.fixTime, 0x44]);
      await connection.close();
    });

    it('accepts a device on the login right after the one refused before it was created, and after it is re-enabled', async () => {
      const refused = await DeviceConnection.open(ports.gt06);
      refused.write(gt06Login('359710049095004', 1));
      await refused.assertClosed();
      const deviceId = await registerDevice(server, owner, '359710049095004');
      const accepted = await DeviceConnection.open(ports.gt06);
      accepted.write(gt06Login('359710049095004', 1));
      assert.equal((await accepted.read(10))[3], 0x01);
      await accepted.close();

      for (const disabled of [true, false]) {
        const changed = await server.app.inject({ method: 'PUT', url: `/api/devices/${deviceId}`, headers: owner.authorization, payload: { disabled } });
        assert.equal(changed.statusCode, 200, changed.body);
      }
      const again = await DeviceConnection.open(ports.gt06);
      again.write(gt06Login('359710049095004', 2));
      assert.equal((await again.read(10))[3], 0x01);
      await again.close();
    });

    it('closes when a location comes before any login', async () => {
      const connection = await DeviceConnection.open(ports.gt06);
      connection.write(gt06Location(fixAt(1), 1));
      await connection.assertClosed();
      assert.equal(connection.unread.length, 0);
    });
  });

  describe('H02', () => {
    it('identifies the device from every message and echoes V4 for a V1 location once stored', async () => {
      const deviceId = await registerDevice(server, owner, '4210051001');
      const connection = await DeviceConnection.open(ports.h02);
      connection.write(Buffer.concat([h02Location('4210051001', fixAt(1)), Buffer.from('\r\n'), h02Location('4210051001', fixAt(2, { sos: true }))]));
      assert.match(await connection.readText('#'), /^\*HQ,4210051001,V4,V1,\d{14}#$/);
      assert.match(await connection.readText('#'), /^\*HQ,4210051001,V4,V1,\d{14}#$/);
      const stored = await positionsOf(server, owner, deviceId);
      assert.deepEqual(stored.map((position) => [position.protocol, position.attributes.alarm]), [
        ['h02', undefined],
        ['h02', 'sos'],
      ]);
      await connection.close();
    });

    it('closes without an echo on a speed beyond any number, storing nothing', async () => {
      const deviceId = await registerDevice(server, owner, '4210051002');
      const connection = await DeviceConnection.open(ports.h02);
      const location = h02Location('4210051002', fixAt(1)).toString('latin1').replace(',10.00,', `,${'9'.repeat(400)},`);
      connection.write(location);
      await connection.assertClosed();
      assert.equal(connection.unread.length, 0);
      assert.deepEqual(await everything(deviceId), []);
    });
  });

  describe('JT808', () => {
    it('stores every record of a 0x0704 batch as archive, answering once after all are stored', async () => {
      const deviceId = await registerDevice(server, owner, '861300000101');
      const connection = await DeviceConnection.open(ports.jt808);
      connection.write(jt808LocationBatch('861300000101', [fixAt(1), fixAt(2), fixAt(3)], 7));
      const ack = await readJt808(connection);
      assert.deepEqual([ack.readUInt16BE(0), ack.readUInt16BE(12), ack.readUInt16BE(14)], [0x8001, 7, 0x0704]);
      const stored = await positionsOf(server, owner, deviceId);
      assert.deepEqual(stored.map((position) => [position.protocol, position.fixTime, position.attributes.archive]), [1, 2, 3].map((seconds) => ['jt808', fixAt(seconds).time.toISOString(), true]));
      await connection.close();
    });

    it('finds a terminal whose id is registered with its leading zeros, as Traccar does', async () => {
      const deviceId = await registerDevice(server, owner, '013800000102');
      const connection = await DeviceConnection.open(ports.jt808);
      for (const serial of [1, 2]) {
        connection.write(jt808Location('013800000102', fixAt(serial), serial));
        assert.equal((await readJt808(connection)).readUInt16BE(12), serial);
      }
      assert.equal((await positionsOf(server, owner, deviceId)).length, 2);
      await connection.close();
    });
  });

  describe('UDP (GPS103 on its TCP port)', () => {
    it('stores a datagram\'s reports and answers the sender once stored; an unknown device gets no answer', async () => {
      const deviceId = await registerDevice(server, owner, '863586019900001');
      const client = dgram.createSocket('udp4');
      client.bind(0, '127.0.0.1');
      await once(client, 'listening');
      const answers: string[] = [];
      client.on('message', (datagram) => answers.push(datagram.toString('latin1')));
      client.send(Buffer.concat([gps103Location('863586019999999', fixAt(1)), gps103Heartbeat('863586019999999')]), ports.gps103, '127.0.0.1');
      client.send(Buffer.concat([gps103Location('863586019900001', fixAt(1)), gps103Location('863586019900001', fixAt(2)), gps103Heartbeat('863586019900001')]), ports.gps103, '127.0.0.1');
      await waitFor(async () => answers, (received) => received.length > 0, 'the answer');
      assert.deepEqual(answers, ['ON']);
      const stored = await positionsOf(server, owner, deviceId);
      assert.deepEqual(stored.map((position) => [position.protocol, position.fixTime]), [1, 2].map((seconds) => ['gps103', fixAt(seconds).time.toISOString()]));
      client.close();
    });

    it('drops a garbage datagram and goes on', async () => {
      const deviceId = await registerDevice(server, owner, '863586019900002');
      const client = dgram.createSocket('udp4');
      const answered = once(client, 'message');
      client.send(Buffer.from('GET / HTTP/1.1\r\n\r\n'), ports.gps103, '127.0.0.1');
      client.send(Buffer.concat([gps103Location('863586019900002', fixAt(1)), gps103Heartbeat('863586019900002')]), ports.gps103, '127.0.0.1');
      assert.equal(String((await answered)[0]), 'ON');
      assert.equal((await positionsOf(server, owner, deviceId)).length, 1);
      client.close();
    });
  });

  describe('UDP (Queclink on its TCP port)', () => {
    it('stores a datagram\'s report and answers its heartbeat to the sender', async () => {
      const deviceId = await registerDevice(server, owner, '860599000999001');
      const client = dgram.createSocket('udp4');
      const answered = once(client, 'message');
      client.send(Buffer.concat([gl200Location('860599000999001', fixAt(1), 7), gl200Heartbeat('860599000999001', fixAt(1).time, 8)]), ports.gl200, '127.0.0.1');
      assert.equal(String((await answered)[0]), '+SACK:GTHBD,1A0800,0008$');
      const stored = await positionsOf(server, owner, deviceId);
      assert.deepEqual(stored.map((position) => [position.protocol, position.fixTime]), [['gl200', fixAt(1).time.toISOString()]]);
      client.close();
    });
  });
});
