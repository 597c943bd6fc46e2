import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../../../src/config.ts';
import { createServer } from '../../../../src/server.ts';
import type { Server } from '../../../../src/server.ts';
import { signIn } from '../../../support/api.ts';
import { createSharedDatabase, testEngines } from '../../../support/engines.ts';
import type { SharedTestDatabase } from '../../../support/engines.ts';
import { scaledOutEnv } from '../../../support/server.ts';
import { waitFor } from '../ingest/support.ts';
import { LiveClient, socketUrl } from '../live/support.ts';
import { Tracker } from './tracker.ts';

const redisUrl = process.env.TEST_REDIS_URL;

/** DESIGN §5.7 and §6: a command posted to one instance reaches the device connected to another, exactly once. */
for (const engine of testEngines()) {
  describe(`commands across two instances [${engine.name}]`, { skip: redisUrl ? false : 'needs TEST_REDIS_URL' }, () => {
    let shared: SharedTestDatabase | undefined;
    let first: Server;
    let second: Server;
    let headers: { authorization: string };
    const ports = { first: 0, second: 0 };
    let serial = 0;

    before(async () => {
      shared = await createSharedDatabase(engine, 'trackstack-commands-multi-');
      const env = scaledOutEnv(shared, redisUrl as string);
      first = await createServer(loadConfig(env));
      second = await createServer(loadConfig(env));
      assert.ok(first.tracking && second.tracking);
      headers = (await signIn(first, `commands-multi-${Date.now()}@example.com`)).authorization;
      ports.first = await first.tracking.ingestion.listen('gt06', 0);
      ports.second = await second.tracking.ingestion.listen('gt06', 0);
    });
    after(async () => {
      await first?.close();
      await second?.close();
      await shared?.dispose();
    });

    async function device(): Promise<{ deviceId: number; uniqueId: string }> {
      const uniqueId = `3597100490${String(++serial).padStart(5, '0')}${Date.now() % 10}`.slice(0, 15);
      const response = await first.app.inject({ method: 'POST', url: '/api/devices/', headers, payload: { name: uniqueId, uniqueId } });
      assert.equal(response.statusCode, 201, response.body);
      return { deviceId: response.json().id as number, uniqueId };
    }
    const send = (server: Server, payload: Record<string, unknown>) => server.app.inject({ method: 'POST', url: '/api/commands/send', headers, payload });
    const history = async (deviceId: number) => (await first.app.inject({ method: 'GET', url: `/api/commands/history?deviceId=${deviceId}`, headers })).json() as { id: number; status: string }[];

    it('a command posted to the instance without the connection is written by the one holding it (200 sent), and its answer is seen on both', async () => {
      const { deviceId, uniqueId } = await device();
      const tracker = await Tracker.connect('gt06', ports.second, uniqueId);
      const live = await LiveClient.open(await socketUrl(first.app), { headers });
      await live.nextOf('positions');
      const response = await send(first, { deviceId, type: 'engineStop' });
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.json().status, 'sent');
      const frame = await tracker.nextCommand();
      assert.equal(frame.readUInt32BE(5), response.json().id);
      tracker.answer(frame);
      const delivered = await live.until((message) => message.commands?.some((command) => command.status === 'delivered') === true);
      assert.equal(delivered.match.commands?.[0]?.id, response.json().id);
      assert.deepEqual((await history(deviceId)).map((command) => command.status), ['delivered']);
      live.close();
      await tracker.close();
    });

    it('queued commands go out once, in order, when the device reconnects to both instances at the same moment', async () => {
      const { deviceId, uniqueId } = await device();
      const ids: number[] = [];
      for (let index = 0; index < 6; index++) {
        const response = await send(index % 2 === 0 ? first : second, { deviceId, type: 'custom', attributes: { data: `C${index}#` } });
        assert.equal(response.statusCode, 202, response.body);
        ids.push(response.json().id);
      }
      const trackers = await Promise.all([Tracker.connect('gt06', ports.first, uniqueId), Tracker.connect('gt06', ports.second, uniqueId)]);
      await waitFor(() => history(deviceId), (list) => list.every((command) => command.status === 'sent'), 'every command to be sent');
      // Claimed before written: wait for the frames themselves too.
      await waitFor(async () => trackers[0]!.pendingCommands + trackers[1]!.pendingCommands, (count) => count >= ids.length, 'every frame');
      const received = await Promise.all(trackers.map(async (tracker) => {
        const flags: number[] = [];
        while (tracker.pendingCommands > 0) flags.push((await tracker.nextCommand()).readUInt32BE(5));
        return flags;
      }));
      assert.deepEqual([...received.flat()].sort((a, b) => a - b), ids, 'each command exactly once');
      for (const flags of received) assert.deepEqual(flags, [...flags].sort((a, b) => a - b), 'in order on each connection');
      await Promise.all(trackers.map((tracker) => tracker.close()));
    });
  });
}
