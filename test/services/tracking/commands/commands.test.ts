import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { request } from 'undici';
import { gt06Protocol } from '../../../../src/services/tracking/protocols/gt06/decoder.ts';
import { osmAndQuery } from '../../../../src/services/tracking/protocols/osmand/simulator.ts';
import type { TrackingTables } from '../../../../src/services/tracking/tables.ts';
import { assertError } from '../../../support/api.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { eventually } from '../../../support/eventually.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { registerDevice, waitFor } from '../ingest/support.ts';
import { LiveClient, bearer, socketUrl } from '../live/support.ts';
import { SkippingClock } from '../support/fake-clock.ts';
import { share } from '../support/tracking.ts';
import { FIX, Tracker } from './tracker.ts';

interface Command {
  id: number;
  deviceId: number;
  type: string;
  attributes: Record<string, unknown>;
  status: string;
  createdAt: string;
  sentAt: string | null;
}

let serial = 0;
const uniqueIdFor = (protocol: string) => (protocol === 'h02' ? `${4100000000 + ++serial}` : `3563070424${String(++serial).padStart(5, '0')}`);

describeEachEngine('commands', (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  let admin: TestLogin;
  const ports = { gt06: 0, teltonika: 0, h02: 0, jt808: 0, gps103: 0, osmand: 0 };

  before(async () => {
    server = await startTestServer(engine);
    owner = await server.login({ email: 'commands-owner@example.com' });
    admin = await server.login({ email: 'commands-admin@example.com', administrator: true });
    const ingestion = server.tracking!.ingestion;
    for (const protocol of ['gt06', 'teltonika', 'h02', 'jt808', 'gps103', 'osmand'] as const) ports[protocol] = await ingestion.listen(protocol, 0);
  });
  after(() => server.dispose());

  const send = (user: TestLogin, payload: Record<string, unknown>) =>
    server.app.inject({ method: 'POST', url: '/api/commands/send', headers: user.authorization, payload });
  const history = async (user: TestLogin, deviceId: number): Promise<Command[]> => {
    const response = await server.app.inject({ method: 'GET', url: `/api/commands/history?deviceId=${deviceId}`, headers: user.authorization });
    assert.equal(response.statusCode, 200, response.body);
    return response.json();
  };
  const types = async (user: TestLogin, deviceId: number): Promise<string[]> => {
    const response = await server.app.inject({ method: 'GET', url: `/api/commands/types?deviceId=${deviceId}`, headers: user.authorization });
    assert.equal(response.statusCode, 200, response.body);
    return response.json().map((entry: { type: string }) => entry.type);
  };
  const statusOf = async (deviceId: number, id: number) => (await history(owner, deviceId)).find((command) => command.id === id)?.status;
  const setFlags = async (user: TestLogin, flags: Record<string, boolean>) => {
    const response = await server.app.inject({ method: 'PUT', url: `/api/auth/users/${user.userId}`, headers: admin.authorization, payload: flags });
    assert.equal(response.statusCode, 200, response.body);
  };
  const commandResults = async (deviceId: number) => {
    const response = await server.app.inject({ method: 'GET', url: `/api/events?deviceId=${deviceId}&type=commandResult&from=2000-01-01T00:00:00Z`, headers: owner.authorization });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as { attributes: { result: string; commandId?: number } }[];
  };

  describe('a connected device', () => {
    for (const protocol of ['gt06', 'teltonika', 'h02', 'jt808', 'gps103'] as const) {
      it(`${protocol}: engineStop is written at once (200 sent), the answer makes it delivered with a commandResult event`, async () => {
        const uniqueId = uniqueIdFor(protocol);
        const deviceId = await registerDevice(server, owner, uniqueId);
        assert.deepEqual(await types(owner, deviceId), ['custom']);
        const tracker = await Tracker.connect(protocol, ports[protocol], uniqueId);
        await waitFor(() => types(owner, deviceId), (list) => list.includes('engineStop'), 'the protocol to be known');
        const live = await LiveClient.open(await socketUrl(server.app), bearer(owner));
        await live.nextOf('positions');

        const response = await send(owner, { deviceId, type: 'engineStop', attributes: {} });
        assert.equal(response.statusCode, 200, response.body);
        const sent: Command = response.json();
        assert.equal(sent.status, 'sent');
        assert.equal(sent.type, 'engineStop');
        assert.ok(sent.sentAt);
        const frame = await tracker.nextCommand();
        if (protocol === 'gt06') assert.equal(frame.readUInt32BE(5), sent.id, 'the server flag carries the command id');
        const liveSent = await live.nextOf('commands');
        assert.deepEqual(liveSent.map((command) => [command.id, command.status]), [[sent.id, 'sent']]);

        tracker.answer(frame);
        const liveDelivered = await live.until((message) => message.commands?.some((command) => command.status === 'delivered') === true);
        assert.equal(liveDelivered.match.commands?.[0]?.id, sent.id);
        assert.equal(await statusOf(deviceId, sent.id), 'delivered');
        const results = await waitFor(() => commandResults(deviceId), (events) => events.length === 1, 'the commandResult event');
        assert.equal(results[0]?.attributes.commandId, sent.id);
        const answers = { h02: /^S20,DONE,/, jt808: /^0x8105 success$/, gps103: /^jt$/, gt06: /./, teltonika: /./ };
        assert.match(results[0]?.attributes.result ?? '', answers[protocol]);
        live.close();
        await tracker.close();
      });
    }

    it('a send is checked against the protocol once, when accepted, and encoded once, when written to the device', async () => {
      const uniqueId = uniqueIdFor('gt06');
      const deviceId = await registerDevice(server, owner, uniqueId);
      const first = await Tracker.connect('gt06', ports.gt06, uniqueId);
      await waitFor(() => types(owner, deviceId), (list) => list.includes('engineStop'), 'the protocol to be known');
      await first.close();
      const encoder = gt06Protocol.commands!;
      const { check, encode } = encoder;
      const calls = { check: 0, encode: 0 };
      Object.assign(encoder, {
        check: (...args: Parameters<typeof check>) => (calls.check++, check(...args)),
        encode: (...args: Parameters<typeof encode>) => (calls.encode++, encode(...args)),
      });
      try {
        // The server sees the close asynchronously: send until one is queued, counting that send's calls alone.
        let queued: Command | undefined;
        await eventually(async () => {
          Object.assign(calls, { check: 0, encode: 0 });
          const response = await send(owner, { deviceId, type: 'engineStop', attributes: {} });
          if (response.statusCode === 202) queued = response.json();
          return queued !== undefined;
        }, 'a send queued for the disconnected device');
        assert.deepEqual(calls, { check: 1, encode: 0 }, 'accepted: checked, not encoded');
        const tracker = await Tracker.connect('gt06', ports.gt06, uniqueId);
        assert.equal((await tracker.nextCommand()).readUInt32BE(5), queued!.id);
        assert.equal(await statusOf(deviceId, queued!.id), 'sent');
        assert.deepEqual(calls, { check: 1, encode: 1 }, 'written: encoded once');
        await tracker.close();
      } finally {
        Object.assign(encoder, { check, encode });
      }
    });

    it('an answer that names no command goes to the oldest sent one (teltonika answers in order)', async () => {
      const uniqueId = uniqueIdFor('teltonika');
      const deviceId = await registerDevice(server, owner, uniqueId);
      const tracker = await Tracker.connect('teltonika', ports.teltonika, uniqueId);
      await waitFor(() => types(owner, deviceId), (list) => list.includes('engineStop'), 'the protocol to be known');
      const first: Command = (await send(owner, { deviceId, type: 'custom', attributes: { data: 'getinfo' } })).json();
      const second: Command = (await send(owner, { deviceId, type: 'custom', attributes: { data: 'getver' } })).json();
      assert.deepEqual([first.status, second.status], ['sent', 'sent']);
      const frames = [await tracker.nextCommand(), await tracker.nextCommand()];
      tracker.answer(frames[0]!);
      await waitFor(() => statusOf(deviceId, first.id), (status) => status === 'delivered', 'the first to be delivered');
      assert.equal(await statusOf(deviceId, second.id), 'sent');
      tracker.answer(frames[1]!);
      await waitFor(() => statusOf(deviceId, second.id), (status) => status === 'delivered', 'the second to be delivered');
      await tracker.close();
    });
  });

  describe("answers recorded from real devices (Traccar's test frames)", () => {
    const recorded = [
      // GT06 0x15 whose length byte is 0, the text padded with NULs (Traccar's Gt06ProtocolDecoderTest line 435).
      { protocol: 'gt06', result: 'DYD=Success!', frame: '7878661500000000004459443d53756363657373210000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010009e82b0d0a' },
      // Teltonika Codec 13 from a device whose clock was never set (Traccar's TeltonikaProtocolDecoderTest line 63).
      { protocol: 'teltonika', result: '0a81c320676574696e666f', frame: '00000000000000170D01050000000F0000016C0A81C320676574696E666F0100006855' },
      // Teltonika Codec 13 whose size leaves out the timestamp (line 60).
      { protocol: 'teltonika', result: '#GET DATAORDER', frame: '000000000000001C0D01050000001056E924222347455420444154414F524445520D0A0100004990' },
    ] as const;
    for (const { protocol, result, frame } of recorded) {
      it(`${protocol} "${result}": the oldest sent command is delivered, with its commandResult`, async () => {
        const uniqueId = uniqueIdFor(protocol);
        const deviceId = await registerDevice(server, owner, uniqueId);
        const tracker = await Tracker.connect(protocol, ports[protocol], uniqueId);
        await waitFor(() => types(owner, deviceId), (list) => list.includes('engineStop'), 'the protocol to be known');
        const sent: Command = (await send(owner, { deviceId, type: 'engineStop', attributes: {} })).json();
        assert.equal(sent.status, 'sent');
        await tracker.nextCommand();
        tracker.write(Buffer.from(frame, 'hex'));
        await waitFor(() => statusOf(deviceId, sent.id), (status) => status === 'delivered', 'the command to be delivered');
        const results = await waitFor(() => commandResults(deviceId), (events) => events.length === 1, 'the commandResult event');
        assert.deepEqual(results[0]?.attributes, { result, commandId: sent.id });
        await tracker.close();
      });
    }
  });

  describe('queued commands', () => {
    it('a device never seen takes only custom commands, queued (202) and sent on its first connection', async () => {
      const uniqueId = uniqueIdFor('gt06');
      const deviceId = await registerDevice(server, owner, uniqueId);
      assertError(await send(owner, { deviceId, type: 'engineStop' }), 400, 'UNSUPPORTED_COMMAND');
      const live = await LiveClient.open(await socketUrl(server.app), bearer(owner));
      await live.nextOf('positions');
      const queued = await send(owner, { deviceId, type: 'custom', attributes: { data: 'WHERE#' } });
      assert.equal(queued.statusCode, 202, queued.body);
      assert.equal(queued.json().status, 'queued');
      assert.equal(queued.json().sentAt, null);
      assert.deepEqual((await live.nextOf('commands')).map((command) => [command.id, command.status]), [[queued.json().id, 'queued']]);
      live.close();
      const tracker = await Tracker.connect('gt06', ports.gt06, uniqueId);
      const frame = await tracker.nextCommand();
      assert.equal(frame.readUInt32BE(5), queued.json().id);
      await waitFor(() => statusOf(deviceId, queued.json().id), (status) => status === 'sent', 'the queued command to be sent');
      await tracker.close();
    });

    it('are sent after a reconnect, in order and once', async () => {
      const uniqueId = uniqueIdFor('teltonika');
      const deviceId = await registerDevice(server, owner, uniqueId);
      const first = await Tracker.connect('teltonika', ports.teltonika, uniqueId);
      await waitFor(() => types(owner, deviceId), (list) => list.includes('engineStop'), 'the protocol to be known');
      await first.close();
      await waitFor(() => history(owner, deviceId), () => true, 'history');
      // The server sees the close asynchronously: wait until a send is queued rather than written.
      const ids: number[] = [];
      for (const data of ['one', 'two', 'three']) {
        const response = await send(owner, { deviceId, type: 'custom', attributes: { data } });
        assert.equal(response.statusCode, 202, response.body);
        ids.push(response.json().id);
      }
      const second = await Tracker.connect('teltonika', ports.teltonika, uniqueId);
      const texts = [];
      for (let index = 0; index < 3; index++) texts.push((await second.nextCommand()).subarray(15, -5).toString('latin1'));
      assert.deepEqual(texts, ['one', 'two', 'three']);
      await second.close();
      const third = await Tracker.connect('teltonika', ports.teltonika, uniqueId);
      await third.report();
      assert.equal(third.pendingCommands, 0, 'nothing is sent twice');
      assert.deepEqual((await history(owner, deviceId)).map((command) => command.status), ['sent', 'sent', 'sent']);
      await third.close();
    });

    it('a queued command the protocol cannot express fails when the device connects, as the live socket shows, and stays failed', async () => {
      const uniqueId = uniqueIdFor('gt06');
      const deviceId = await registerDevice(server, owner, uniqueId);
      const live = await LiveClient.open(await socketUrl(server.app), bearer(owner));
      await live.nextOf('positions');
      const tooLong = await send(owner, { deviceId, type: 'custom', attributes: { data: 'x'.repeat(300) } });
      assert.equal(tooLong.statusCode, 202, tooLong.body);
      const fits = await send(owner, { deviceId, type: 'custom', attributes: { data: 'STATUS#' } });
      const doomedId: number = tooLong.json().id;
      const tracker = await Tracker.connect('gt06', ports.gt06, uniqueId);
      const frame = await tracker.nextCommand();
      assert.equal(commandText(frame), 'STATUS#');
      const { match } = await live.until((message) => message.commands?.some((command) => command.id === doomedId && command.status === 'failed') === true);
      assert.deepEqual(
        match.commands?.filter((command) => command.id === doomedId).map((command) => [command.status, command.sentAt]),
        [['failed', null]],
        'nothing went out, so no sentAt',
      );
      const failed = (await history(owner, deviceId)).find((command) => command.id === doomedId);
      assert.deepEqual([failed?.status, failed?.sentAt], ['failed', null]);

      // Failed is final: the device's answer goes to the command that went out, and a new connection sends nothing.
      tracker.answer(frame);
      await waitFor(() => statusOf(deviceId, fits.json().id), (status) => status === 'delivered', 'the answer to the command sent');
      await tracker.close();
      const again = await Tracker.connect('gt06', ports.gt06, uniqueId);
      await again.report();
      assert.equal(again.pendingCommands, 0, 'the failed command is not sent on the next connection');
      assert.equal(await statusOf(deviceId, doomedId), 'failed');
      live.close();
      await again.close();
    });
    it('a command queued for one protocol fails when the device comes back speaking one that cannot send it', async () => {
      const uniqueId = uniqueIdFor('h02');
      const deviceId = await registerDevice(server, owner, uniqueId);
      const h02 = await Tracker.connect('h02', ports.h02, uniqueId);
      await waitFor(() => types(owner, deviceId), (list) => list.includes('alarmArm'), 'the protocol to be known');
      await h02.close();
      const live = await LiveClient.open(await socketUrl(server.app), bearer(owner));
      await live.nextOf('positions');
      const arm = await waitFor(
        () => send(owner, { deviceId, type: 'alarmArm', attributes: {} }),
        (response) => response.statusCode === 202,
        'a send queued once the server has seen the close',
      );
      const armId: number = arm.json().id;
      const teltonika = await Tracker.connect('teltonika', ports.teltonika, uniqueId);
      const { match } = await live.until((message) => message.commands?.some((command) => command.id === armId && command.status === 'failed') === true);
      assert.equal(match.commands?.find((command) => command.id === armId)?.sentAt, null);
      assert.equal(await statusOf(deviceId, armId), 'failed');
      await teltonika.report();
      assert.equal(teltonika.pendingCommands, 0, 'nothing was written to the device');
      live.close();
      await teltonika.close();
    });
  });

  describe('who may send', () => {
    let deviceId: number;
    let friend: TestLogin;
    before(async () => {
      deviceId = await registerDevice(server, owner, uniqueIdFor('gt06'));
      friend = await server.login({ email: 'commands-friend@example.com' });
    });

    it('a share without the commands permission: 403 PERMISSION_REQUIRED; a stranger: 403; no device: 404', async () => {
      await share(server, owner, deviceId, 'commands-friend@example.com', { position: true, commands: false });
      assertError(await send(friend, { deviceId, type: 'custom', attributes: { data: 'x' } }), 403, 'PERMISSION_REQUIRED');
      const stranger = await server.login({ email: 'commands-stranger@example.com' });
      assertError(await send(stranger, { deviceId, type: 'custom', attributes: { data: 'x' } }), 403, 'FORBIDDEN');
      assertError(await server.app.inject({ method: 'GET', url: `/api/commands/history?deviceId=${deviceId}`, headers: stranger.authorization }), 403, 'FORBIDDEN');
      assertError(await send(owner, { deviceId: 999_999, type: 'custom', attributes: { data: 'x' } }), 404, 'NOT_FOUND');
      assert.deepEqual(await history(owner, deviceId), []);
    });

    it('readonly, deviceReadonly and limitCommands users are refused, each with its code; saved commands pass limitCommands', async () => {
      const widened = await server.app.inject({
        method: 'PUT',
        url: `/api/devices/${deviceId}/shares/${friend.userId}`,
        headers: owner.authorization,
        payload: { permissions: { position: true, events: false, geofences: false, notifications: false, commands: true } },
      });
      assert.equal(widened.statusCode, 200, widened.body);
      const custom = { deviceId, type: 'custom', attributes: { data: 'x' } };
      await setFlags(friend, { readonly: true });
      assertError(await send(friend, custom), 403, 'USER_READONLY');
      await setFlags(friend, { readonly: false, deviceReadonly: true });
      assertError(await send(friend, custom), 403, 'USER_DEVICE_READONLY');
      await setFlags(friend, { deviceReadonly: false, limitCommands: true });
      assertError(await send(friend, custom), 403, 'COMMANDS_LIMITED');
      assertError(await server.app.inject({ method: 'POST', url: '/api/commands', headers: friend.authorization, payload: { description: 'mine', type: 'custom', attributes: { data: 'x' } } }), 403, 'COMMANDS_LIMITED');
      assert.deepEqual(await history(owner, deviceId), []);

      const saved = await server.app.inject({ method: 'POST', url: '/api/commands', headers: admin.authorization, payload: { description: 'Locate', type: 'custom', attributes: { data: 'WHERE#' } } });
      assert.equal(saved.statusCode, 201, saved.body);
      const queued = await send(friend, { deviceId, commandId: saved.json().id });
      assert.equal(queued.statusCode, 202, queued.body);
      assert.deepEqual([queued.json().type, queued.json().attributes], ['custom', { data: 'WHERE#' }]);
      await setFlags(friend, { limitCommands: false });
    });
  });

  describe('bad input, nothing queued', () => {
    let deviceId: number;
    before(async () => {
      const uniqueId = uniqueIdFor('gt06');
      deviceId = await registerDevice(server, owner, uniqueId);
      const tracker = await Tracker.connect('gt06', ports.gt06, uniqueId);
      await waitFor(() => types(owner, deviceId), (list) => list.includes('engineStop'), 'the protocol to be known');
      await tracker.close();
    });

    const cases: [string, Record<string, unknown>, number, string][] = [
      ['an unknown type', { type: 'selfDestruct' }, 400, 'UNSUPPORTED_COMMAND'],
      ['a type the protocol lacks', { type: 'rebootDevice' }, 400, 'UNSUPPORTED_COMMAND'],
      ['custom without data', { type: 'custom', attributes: {} }, 400, 'INVALID_COMMAND_ATTRIBUTES'],
      ['custom with empty data', { type: 'custom', attributes: { data: '' } }, 400, 'INVALID_COMMAND_ATTRIBUTES'],
      ['custom data with a control character', { type: 'custom', attributes: { data: 'a\u0001' } }, 400, 'INVALID_COMMAND_ATTRIBUTES'],
      ['an attribute the type does not take', { type: 'engineStop', attributes: { force: true } }, 400, 'INVALID_COMMAND_ATTRIBUTES'],
      ['data longer than a GT06 frame holds', { type: 'custom', attributes: { data: 'x'.repeat(300) } }, 400, 'INVALID_COMMAND_ATTRIBUTES'],
      ['neither type nor commandId', {}, 400, 'VALIDATION_FAILED'],
      ['both type and commandId', { type: 'custom', attributes: { data: 'x' }, commandId: 1 }, 400, 'VALIDATION_FAILED'],
      ['an unknown saved command', { commandId: 999_999 }, 404, 'NOT_FOUND'],
      ['an unknown field', { type: 'custom', attributes: { data: 'x' }, extra: 1 }, 400, 'VALIDATION_FAILED'],
      ['a type name too long', { type: 'x'.repeat(100) }, 400, 'VALIDATION_FAILED'],
    ];
    for (const [what, body, status, code] of cases) {
      it(`${what}: ${status} ${code}`, async () => {
        assertError(await send(owner, { deviceId, ...body }), status, code);
        assert.deepEqual(await history(owner, deviceId), []);
      });
    }

    it('a deviceId that is not an id, and a body that is not JSON: 400', async () => {
      assertError(await send(owner, { deviceId: 'one', type: 'custom', attributes: { data: 'x' } }), 400, 'VALIDATION_FAILED');
      const malformed = await server.app.inject({ method: 'POST', url: '/api/commands/send', headers: { ...owner.authorization, 'content-type': 'application/json' }, payload: '{"deviceId":' });
      assert.equal(malformed.statusCode, 400);
      assert.deepEqual(await history(owner, deviceId), []);
    });

    it('positionPeriodic needs a frequency from 1 to 86400 seconds (H02)', async () => {
      const uniqueId = uniqueIdFor('h02');
      const h02Device = await registerDevice(server, owner, uniqueId);
      const tracker = await Tracker.connect('h02', ports.h02, uniqueId);
      await waitFor(() => types(owner, h02Device), (list) => list.includes('positionPeriodic'), 'the protocol to be known');
      for (const frequency of [0, 86_401, 1.5, '10']) {
        assertError(await send(owner, { deviceId: h02Device, type: 'positionPeriodic', attributes: { frequency } }), 400, 'INVALID_COMMAND_ATTRIBUTES');
      }
      assert.deepEqual(await history(owner, h02Device), []);
      const sent = await send(owner, { deviceId: h02Device, type: 'positionPeriodic', attributes: { frequency: 30 } });
      assert.equal(sent.statusCode, 200, sent.body);
      assert.match((await tracker.nextCommand()).toString('latin1'), new RegExp(`^\\*HQ,${uniqueId},S71,\\d{6},22,30#$`));
      await tracker.close();
    });
  });

  describe('OsmAnd devices', () => {
    it('take no commands: types is empty and a send answers 400 UNSUPPORTED_COMMAND', async () => {
      const deviceId = await registerDevice(server, owner, 'commands-phone');
      const response = await request(`http://127.0.0.1:${ports.osmand}/?${osmAndQuery('commands-phone', FIX)}`);
      await response.body.dump();
      assert.equal(response.statusCode, 200);
      await waitFor(() => types(owner, deviceId), (list) => list.length === 0, 'the protocol to be known');
      assertError(await send(owner, { deviceId, type: 'custom', attributes: { data: 'x' } }), 400, 'UNSUPPORTED_COMMAND');
      assert.deepEqual(await history(owner, deviceId), []);
    });
  });

  describe('saved commands', () => {
    it('belong to their creator: others get 404, administrators see theirs shared', async () => {
      const create = await server.app.inject({ method: 'POST', url: '/api/commands', headers: owner.authorization, payload: { description: 'Stop', type: 'engineStop' } });
      assert.equal(create.statusCode, 201, create.body);
      const id = create.json().id;
      assert.deepEqual([create.json().description, create.json().byAdministrator], ['Stop', false]);
      const other = await server.login({ email: 'commands-other@example.com' });
      assertError(await server.app.inject({ method: 'GET', url: `/api/commands/${id}`, headers: other.authorization }), 404, 'NOT_FOUND');
      assertError(await server.app.inject({ method: 'PUT', url: `/api/commands/${id}`, headers: other.authorization, payload: { description: 'mine', type: 'engineStop' } }), 404, 'NOT_FOUND');
      assertError(await server.app.inject({ method: 'DELETE', url: `/api/commands/${id}`, headers: other.authorization }), 404, 'NOT_FOUND');
      const list = (await server.app.inject({ method: 'GET', url: '/api/commands', headers: other.authorization })).json();
      assert.ok(list.every((saved: { id: number; byAdministrator: boolean }) => saved.id !== id && saved.byAdministrator));

      const updated = await server.app.inject({ method: 'PUT', url: `/api/commands/${id}`, headers: owner.authorization, payload: { description: 'Resume', type: 'engineResume' } });
      assert.equal(updated.statusCode, 200, updated.body);
      assert.equal((await server.app.inject({ method: 'GET', url: `/api/commands/${id}`, headers: owner.authorization })).json().type, 'engineResume');
      assertError(await server.app.inject({ method: 'PUT', url: `/api/commands/${id}`, headers: owner.authorization, payload: { description: 'Bad', type: 'custom' } }), 400, 'INVALID_COMMAND_ATTRIBUTES');
      assert.equal((await server.app.inject({ method: 'GET', url: `/api/commands/${id}`, headers: owner.authorization })).json().description, 'Resume');
      assert.equal((await server.app.inject({ method: 'DELETE', url: `/api/commands/${id}`, headers: owner.authorization })).statusCode, 204);
      assertError(await server.app.inject({ method: 'GET', url: `/api/commands/${id}`, headers: owner.authorization }), 404, 'NOT_FOUND');
    });

    it("go with their creator's account; a deleted device's commands go with it", async () => {
      const leaving = await server.login({ email: 'commands-leaving@example.com' });
      const saved = await server.app.inject({ method: 'POST', url: '/api/commands', headers: leaving.authorization, payload: { description: 'Mine', type: 'engineStop' } });
      assert.equal(saved.statusCode, 201, saved.body);
      const deviceId = await registerDevice(server, leaving, uniqueIdFor('gt06'));
      const queued = await send(leaving, { deviceId, type: 'custom', attributes: { data: 'BYE#' } });
      assert.equal(queued.statusCode, 202, queued.body);
      assert.equal((await server.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: leaving.authorization })).statusCode, 204);
      const db = server.database!.db as Kysely<TrackingTables>;
      await eventually(async () => (await db.selectFrom('saved_commands').select('id').where('id', '=', saved.json().id).execute()).length === 0, 'the saved command removed');
      await eventually(async () => (await db.selectFrom('commands').select('id').where('device_id', '=', deviceId).execute()).length === 0, "the device's commands removed");
    });

    it("an administrator's command stays usable by limitCommands users only while administrators edit it: a demoted creator's edit clears byAdministrator", async () => {
      const creator = await server.login({ email: 'commands-demoted@example.com', administrator: true });
      const limited = await server.login({ email: 'commands-limited@example.com' });
      await setFlags(limited, { limitCommands: true });
      const deviceId = await registerDevice(server, limited, uniqueIdFor('gt06'));
      const saved = await server.app.inject({ method: 'POST', url: '/api/commands', headers: creator.authorization, payload: { description: 'Locate', type: 'custom', attributes: { data: 'WHERE#' } } });
      assert.equal(saved.json().byAdministrator, true);
      const id = saved.json().id as number;
      const edit = (by: TestLogin, data: string) =>
        server.app.inject({ method: 'PUT', url: `/api/commands/${id}`, headers: by.authorization, payload: { description: 'Locate', type: 'custom', attributes: { data } } });
      const edited = await edit(creator, 'WHERE,1#');
      assert.equal(edited.json().byAdministrator, true, 'an administrator edits it: still vouched for');
      assert.equal((await send(limited, { deviceId, commandId: id })).statusCode, 202);

      await setFlags(creator, { administrator: false });
      const demoted = await edit(creator, 'RELAY,1#');
      assert.equal(demoted.statusCode, 200, demoted.body);
      assert.equal(demoted.json().byAdministrator, false);
      assertError(await send(limited, { deviceId, commandId: id }), 404, 'NOT_FOUND');
      assert.deepEqual((await history(limited, deviceId)).map((command) => command.attributes), [{ data: 'WHERE,1#' }], 'only the send before the demotion');
      assert.equal((await server.app.inject({ method: 'GET', url: '/api/commands', headers: limited.authorization })).json().some((command: { id: number }) => command.id === id), false);

      // An administrator's edit does not vouch for a command it did not create as one.
      assert.equal((await edit(admin, 'WHERE#')).json().byAdministrator, false);
    });

    it('refuse bad input with nothing saved', async () => {
      const before = (await server.app.inject({ method: 'GET', url: '/api/commands', headers: owner.authorization })).json().length;
      for (const payload of [{ description: '', type: 'custom', attributes: { data: 'x' } }, { description: 'x', type: 'nope' }, { description: 'x', type: 'sosNumber', attributes: { index: 1, phone: 'call me' } }, { type: 'engineStop' }]) {
        const response = await server.app.inject({ method: 'POST', url: '/api/commands', headers: owner.authorization, payload });
        assert.equal(response.statusCode, 400, response.body);
      }
      assert.equal((await server.app.inject({ method: 'GET', url: '/api/commands', headers: owner.authorization })).json().length, before);
    });
  });
});

describeEachEngine('commands past COMMAND_TTL', (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  let port = 0;
  const clock = new SkippingClock();
  before(async () => {
    server = await startTestServer(engine, { COMMAND_TTL: '60' }, { trackingClock: clock });
    owner = await server.login({ email: 'commands-ttl@example.com' });
    port = await server.tracking!.ingestion.listen('gt06', 0);
  });
  after(() => server.dispose());

  it('expire instead of going out when the device connects too late', async () => {
    const uniqueId = uniqueIdFor('gt06');
    const deviceId = await registerDevice(server, owner, uniqueId);
    const queued = await server.app.inject({ method: 'POST', url: '/api/commands/send', headers: owner.authorization, payload: { deviceId, type: 'custom', attributes: { data: 'LATE#' } } });
    assert.equal(queued.statusCode, 202, queued.body);
    clock.skip(61_000);
    const tracker = await Tracker.connect('gt06', port, uniqueId);
    await tracker.report();
    const statuses = await waitFor(
      async () => (await server.app.inject({ method: 'GET', url: `/api/commands/history?deviceId=${deviceId}`, headers: owner.authorization })).json() as Command[],
      (list) => list[0]?.status === 'expired',
      'the command to expire',
    );
    assert.equal(statuses.length, 1);
    assert.equal(tracker.pendingCommands, 0);
    await tracker.close();
  });
});

function commandText(frame: Buffer): string {
  return frame.subarray(9, 9 + frame[4]! - 4).toString('latin1');
}
