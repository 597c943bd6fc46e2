import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { gt06Location, gt06Login, h02Location, teltonikaAvlPacket, teltonikaHandshake } from '../../../../src/services/tracking/protocols/encoders.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { DeviceConnection, deviceOf, fixAt, latestOf, positionsOf, registerDevice } from './support.ts';
import { identification, TCP_PROTOCOLS } from './tcp-protocols.ts';

const ACK_ONE = Buffer.from([0, 0, 0, 1]);
const ACCEPTED = Buffer.from([1]);
/** A GT06 heartbeat (0x13 status) with serial 0x01BA, from Traccar's tests; its ack is 10 bytes. */
const GT06_HEARTBEAT = Buffer.from('78780a13440604000201baaf540d0a', 'hex');
const DAY_MS = 86_400_000;

describeEachEngine('device TCP listeners, end to end', (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  const ports = { teltonika: 0, gt06: 0, h02: 0, osmand: 0 };

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
          await row.readPositionAck(connection, 2);
          const stored = await positionsOf(server, owner, deviceId);
          assert.deepEqual(stored.map((position) => [position.protocol, position.fixTime, position.latitude]), [[row.protocol, fixAt(1).time.toISOString(), 52.5]]);
          await connection.close();
        });

        it('reassembles frames delivered a few bytes at a time', async () => {
          const uniqueId = row.uniqueId(2);
          const deviceId = await registerDevice(server, owner, uniqueId);
          const connection = await DeviceConnection.open(port());
          const login = row.login(uniqueId) ?? Buffer.alloc(0);
          await connection.trickle(Buffer.concat([login, row.position(uniqueId, fixAt(10), 2)]), 3);
          await row.readLoginAccepted(connection);
          await row.readPositionAck(connection, 2);
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
          for (let seconds = 0; seconds < 20; seconds++) {
            connection.write(row.position(uniqueId, fixAt(seconds), seconds + 2));
            await row.readPositionAck(connection, seconds + 2);
            const [device, latest] = await Promise.all([deviceOf(server, owner, deviceId), latestOf(server, owner, deviceId)]);
            assert.equal(latest?.fixTime, fixAt(seconds).time.toISOString());
            assert.deepEqual([device.status, device.positionId], ['online', latest?.id], `record ${seconds}`);
          }
          await connection.close();
        });

        it('keeps an out-of-order position but does not make it the latest', async () => {
          const { deviceId, uniqueId, connection } = await loggedIn(6);
          connection.write(row.position(uniqueId, fixAt(100), 2));
          await row.readPositionAck(connection, 2);
          connection.write(row.position(uniqueId, fixAt(50), 3));
          await row.readPositionAck(connection, 3);
          assert.equal((await positionsOf(server, owner, deviceId)).length, 2);
          assert.equal((await latestOf(server, owner, deviceId))?.fixTime, fixAt(100).time.toISOString());
          await connection.close();
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

    it('closes on a bad CRC, storing nothing of that packet but acknowledging what came before', async () => {
      const deviceId = await registerDevice(server, owner, '356307042441005');
      const connection = await DeviceConnection.open(ports.teltonika);
      const corrupt = teltonikaAvlPacket([fixAt(31)]);
      corrupt[corrupt.length - 1] = (corrupt[corrupt.length - 1] as number) ^ 0xff;
      connection.write(Buffer.concat([teltonikaHandshake('356307042441005'), teltonikaAvlPacket([fixAt(30)]), corrupt]));
      assert.deepEqual(await connection.read(5), Buffer.concat([ACCEPTED, ACK_ONE]));
      await connection.assertClosed();
      assert.deepEqual((await positionsOf(server, owner, deviceId)).map((position) => position.fixTime), [fixAt(30).time.toISOString()]);
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
      connection.write(GT06_HEARTBEAT);
      const ack = await connection.read(10);
      assert.deepEqual([ack[3], ack.readUInt16BE(4)], [0x13, 0x01ba]);
      const [status] = await everything(deviceId);
      assert.deepEqual([status?.protocol, status?.valid, status?.attributes.status], ['gt06', false, 0x44]);
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

    it('closes on a bad CRC', async () => {
      const deviceId = await registerDevice(server, owner, '359710049095002');
      const connection = await DeviceConnection.open(ports.gt06);
      connection.write(gt06Login('359710049095002', 1));
      await connection.read(10);
      const corrupt = gt06Location(fixAt(1), 2);
      corrupt[10] = (corrupt[10] as number) ^ 0x01;
      connection.write(corrupt);
      await connection.assertClosed();
      assert.deepEqual(await positionsOf(server, owner, deviceId), []);
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
});
