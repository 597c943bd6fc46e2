import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { LiveClient, bearer, socketUrl } from '../live/support.ts';
import type { LiveMessage } from '../live/support.ts';
import { createDevice, share } from '../support/tracking.ts';

describeEachEngine('command status on the live socket', (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  let watcher: TestLogin;
  let operator: TestLogin;
  let deviceId: number;

  before(async () => {
    server = await startTestServer(engine);
    owner = await server.login({ email: 'live-commands-owner@example.com' });
    watcher = await server.login({ email: 'live-commands-watcher@example.com' });
    operator = await server.login({ email: 'live-commands-operator@example.com' });
    deviceId = await createDevice(server, owner, 'live-commands-1');
    await share(server, owner, deviceId, 'live-commands-watcher@example.com', { position: true, events: true });
    await share(server, owner, deviceId, 'live-commands-operator@example.com', { position: true, events: true, commands: true });
  });
  after(() => server.dispose());

  /** The messages a socket gets up to the events message of `eventId`: sockets keep their order, so all that was sent before it. */
  async function messagesBefore(live: LiveClient, eventId: number): Promise<LiveMessage[]> {
    const { before } = await live.until((message) => message.events?.some((event) => event.id === eventId) === true);
    return before;
  }

  it('reach sharees with the commands permission, never those without it (nor the command text)', async () => {
    const url = await socketUrl(server.app);
    const sockets = await Promise.all([owner, watcher, operator].map((user) => LiveClient.open(url, bearer(user))));
    await Promise.all(sockets.map((live) => live.nextOf('positions')));
    const [ownerLive, watcherLive, operatorLive] = sockets as [LiveClient, LiveClient, LiveClient];

    const sent = await server.app.inject({
      method: 'POST',
      url: '/api/commands/send',
      headers: owner.authorization,
      payload: { deviceId, type: 'custom', attributes: { data: 'PASSWORD,123456#' } },
    });
    assert.equal(sent.statusCode, 202, sent.body);
    // Every watcher of the device may see events: an event announced after the send marks where the command's message would be.
    const eventId = 424242;
    await server.bus.publish('tracking.events.created', { events: [{ deviceId, json: JSON.stringify({ id: eventId, deviceId, type: 'alarm' }) }] });

    for (const [live, who] of [[ownerLive, 'the owner'], [operatorLive, 'a sharee with commands']] as const) {
      const commands = (await messagesBefore(live, eventId)).flatMap((message) => message.commands ?? []);
      assert.deepEqual(commands.map((command) => [command.id, command.status]), [[sent.json().id, 'queued']], who);
      assert.deepEqual((commands[0] as unknown as { attributes: unknown }).attributes, { data: 'PASSWORD,123456#' });
    }
    const seenByWatcher = await messagesBefore(watcherLive, eventId);
    assert.deepEqual(seenByWatcher.filter((message) => message.commands !== undefined), [], 'a sharee without commands gets no command message');
    assert.doesNotMatch(JSON.stringify(seenByWatcher), /PASSWORD,123456/);
    for (const live of sockets) live.close();
  });
});
