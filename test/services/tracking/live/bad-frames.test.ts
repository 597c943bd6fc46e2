import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';
import { signIn } from '../../../support/api.ts';
import type { SignedIn } from '../../../support/api.ts';
import { LiveClient, bearer, tunedInstance } from './support.ts';

interface LogLine {
  level: number;
  msg: string;
  err?: { code?: string };
}

const DEBUG = 20;
const ERROR = 50;

/** Upgrades a bare TCP connection, writes `frame` once the server has switched protocols, and resolves when the server closes. */
function sendRawFrame(url: string, token: string, frame: Buffer): Promise<void> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    let head = '';
    socket.on('data', (chunk: Buffer) => {
      if (head.includes('\r\n\r\n')) return;
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      if (!head.startsWith('HTTP/1.1 101')) reject(new Error(`the upgrade was refused: ${head.split('\r\n')[0]}`));
      socket.write(frame);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve());
    socket.write(
      [
        `GET ${target.pathname} HTTP/1.1`,
        `Host: ${target.host}`,
        'Connection: Upgrade',
        'Upgrade: websocket',
        'Sec-WebSocket-Version: 13',
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
        `Authorization: Bearer ${token}`,
      ].join('\r\n') + '\r\n\r\n',
    );
  });
}

describeEachEngine('live updates: bad frames from a client', (engine) => {
  let server: TestServer;
  let instance: { url: string; close(): Promise<void> };
  let user: SignedIn;
  const lines: LogLine[] = [];

  before(async () => {
    server = await startTestServer(engine);
    const logStream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as LogLine);
        done();
      },
    });
    instance = await tunedInstance(server, {}, logStream);
    user = await signIn(server, 'bad-frames@example.com');
  });
  after(async () => {
    await instance.close();
    await server.dispose();
  });

  it('logs a frame with a reserved opcode at debug, not error, and closes the socket', async () => {
    lines.length = 0;
    // FIN with opcode 3 (reserved), masked, empty payload.
    await sendRawFrame(instance.url, user.token, Buffer.from([0x83, 0x80, 1, 2, 3, 4]));
    const badFrame = lines.filter((line) => line.err?.code === 'WS_ERR_INVALID_OPCODE');
    assert.equal(badFrame.length, 1);
    assert.equal(badFrame[0]?.level, DEBUG);
    assert.deepEqual(lines.filter((line) => line.level >= ERROR), []);
  });

  it('logs a message over the size limit at debug and closes with 1009', async () => {
    lines.length = 0;
    const client = await LiveClient.open(instance.url, bearer(user));
    client.socket.send('x'.repeat(5000));
    assert.equal((await client.waitClosed()).code, 1009);
    const tooLong = lines.filter((line) => line.err?.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH');
    assert.equal(tooLong.length, 1);
    assert.equal(tooLong[0]?.level, DEBUG);
    assert.deepEqual(lines.filter((line) => line.level >= ERROR), []);
  });
});
