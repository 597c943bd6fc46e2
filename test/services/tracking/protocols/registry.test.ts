import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import { Registry } from 'prom-client';
import { loadConfig } from '../../../../src/config.ts';
import { DeviceListeners } from '../../../../src/services/tracking/ingest/listeners.ts';
import { meteredSink } from '../../../../src/services/tracking/ingest/metered-sink.ts';
import { decodeOsmAnd } from '../../../../src/services/tracking/protocols/osmand/decoder.ts';
import { DEVICE_PROTOCOLS, PROTOCOL_REGISTRY } from '../../../../src/services/tracking/protocols/registry.ts';
import type { ConnectionState, DecodedMessage } from '../../../../src/services/tracking/protocols/types.ts';
import { TCP_PROTOCOLS as TCP_SCENARIOS } from '../ingest/tcp-protocols.ts';

const FIX = { time: new Date('2026-03-01T12:00:00Z'), latitude: 52.52, longitude: 13.405, altitude: 35, speed: 20, course: 90, valid: true };

/** Whether a UDP socket can bind the port on the loopback address: false while a listener holds it. */
async function udpFree(port: number): Promise<boolean> {
  const socket = dgram.createSocket('udp4');
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, '127.0.0.1', resolve);
    });
    return true;
  } catch {
    return false;
  } finally {
    socket.close();
  }
}

describe('protocol registry: the one list of protocols', () => {
  it('has one entry per name, and each decoder carries its entry name', async () => {
    assert.equal(new Set(DEVICE_PROTOCOLS).size, PROTOCOL_REGISTRY.length);
    assert.equal(new Set(PROTOCOL_REGISTRY.map((entry) => entry.port.variable)).size, PROTOCOL_REGISTRY.length);
    for (const entry of PROTOCOL_REGISTRY) {
      if ('decoder' in entry) assert.equal((await entry.decoder()).name, entry.name);
      else assert.deepEqual(entry.transports, ['http'], `${entry.name}: a protocol without a frame decoder is served over HTTP`);
    }
  });

  it('one folder per protocol: each entry names its own folder, and every folder is an entry', () => {
    const folder = 'src/services/tracking/protocols';
    const folders = readdirSync(folder, { withFileTypes: true }).filter((item) => item.isDirectory()).map((item) => item.name);
    assert.deepEqual(folders.sort(), [...DEVICE_PROTOCOLS].sort());
    const registry = readFileSync(path.join(folder, 'registry.ts'), 'utf8');
    for (const entry of PROTOCOL_REGISTRY) {
      const line = registry.split('\n').find((text) => text.includes(`name: '${entry.name}'`)) ?? '';
      for (const module of [...('decoder' in entry ? ['decoder'] : []), 'simulator']) assert.ok(line.includes(`import('./${entry.name}/${module}.ts')`), `${entry.name}: its ${module} from its folder`);
    }
  });

  it('the metrics label every protocol of the registry, and only those', async () => {
    const metrics = new Registry();
    meteredSink({ identify: () => Promise.resolve(undefined), accept: () => Promise.resolve({ withoutFix: 0 }), connected: () => undefined, disconnected: () => undefined }, metrics);
    for (const name of ['trackstack_ingest_positions_total', 'trackstack_ingest_checksum_mismatches_total', 'trackstack_ingest_implausible_values_total']) {
      const { values } = await metrics.getSingleMetric(name)!.get();
      assert.deepEqual([...new Set(values.map((value) => value.labels['protocol']))].sort(), [...DEVICE_PROTOCOLS].sort(), name);
    }
  });

  it('config reads every entry port variable, with its default, and no other device port', () => {
    const defaults = loadConfig({}).devicePorts;
    assert.deepEqual(Object.keys(defaults), [...DEVICE_PROTOCOLS]);
    const example = readFileSync(path.resolve('.env.example'), 'utf8');
    for (const { name, port } of PROTOCOL_REGISTRY) {
      assert.equal(defaults[name], port.default, name);
      assert.equal(loadConfig({ [port.variable]: '4321' }).devicePorts[name], 4321, port.variable);
      assert.match(example, new RegExp(`^# ${port.variable}=${port.default}\\b`, 'm'), `.env.example documents ${port.variable}`);
    }
  });

  describe('listeners', () => {
    const listeners = new DeviceListeners({
      sink: { identify: () => Promise.resolve(undefined), accept: () => Promise.reject(new Error('no device')), connected: () => undefined, disconnected: () => undefined },
      host: '127.0.0.1',
      idleTimeoutMs: 10_000,
      connectionsPerIp: 10,
      log: pino({ level: 'silent' }),
      logLevel: 'silent',
    });
    after(() => listeners.close());

    it('opens the transports each entry declares, and only those', async () => {
      for (const entry of PROTOCOL_REGISTRY) {
        const port = await listeners.listen(entry.name, 0);
        const opened = listeners.opened().filter((listener) => listener.protocol === entry.name);
        assert.deepEqual(opened.map((listener) => listener.transport).sort(), [...entry.transports].sort(), entry.name);
        assert.ok(opened.every((listener) => listener.port === port), `${entry.name}: every transport on the one port`);
        // Read back from the sockets: the UDP port is held exactly where the entry declares UDP.
        assert.equal(await udpFree(port), !(entry.transports as readonly string[]).includes('udp'), `${entry.name}: UDP port ${port}`);
      }
      assert.deepEqual([...new Set(listeners.opened().map((listener) => listener.protocol))], [...DEVICE_PROTOCOLS]);
    });
  });

  it('a listener tells who records protocols the protocol of a device once per connection, not once per frame', async () => {
    const identified: [number, string][] = [];
    const accepted: string[] = [];
    const device = { id: 7, uniqueId: '' };
    const listeners = new DeviceListeners({
      sink: {
        identify: (uniqueId) => Promise.resolve({ ...device, uniqueId }),
        accept: (_device, protocol) => {
          accepted.push(protocol);
          return Promise.resolve({ withoutFix: 0 });
        },
        connected: () => undefined,
        disconnected: () => undefined,
      },
      host: '127.0.0.1',
      idleTimeoutMs: 10_000,
      connectionsPerIp: 10,
      log: pino({ level: 'silent' }),
      logLevel: 'silent',
      identified: (identifiedDevice, protocol) => {
        identified.push([identifiedDevice.id, protocol]);
        return Promise.resolve();
      },
    });
    try {
      const port = await listeners.listen('gt06', 0);
      const frames = await PROTOCOL_REGISTRY.find((entry) => entry.name === 'gt06')!.simulator();
      const uniqueId = frames.uniqueId(1);
      const socket = net.connect({ port, host: '127.0.0.1' });
      let received = 0;
      const acknowledged = new Promise<void>((resolve) => {
        socket.on('data', (chunk) => {
          received += chunk.length;
          // GT06 answers the login and each report with a 10-byte acknowledgement.
          if (received >= 40) resolve();
        });
      });
      socket.write(Buffer.concat([...frames.login(uniqueId, 1), ...[2, 3, 4].map((serial) => frames.report(uniqueId, FIX, serial))]));
      await acknowledged;
      socket.destroy();
      assert.deepEqual(identified, [[7, 'gt06']]);
      assert.deepEqual(accepted, ['gt06', 'gt06', 'gt06', 'gt06']);
    } finally {
      await listeners.close();
    }
  });

  it('every entry has a simulated tracker, whose frames decode with its decoder into the simulated fix', async () => {
    for (const entry of PROTOCOL_REGISTRY) {
      const frames = await entry.simulator();
      const uniqueId = frames.uniqueId(7);
      const messages: DecodedMessage[] = [];
      if ('decoder' in entry) {
        const decoder = await entry.decoder();
        const state: ConnectionState = {};
        for (const data of [...frames.login(uniqueId, 1), frames.report(uniqueId, FIX, 3)]) {
          const split = decoder.splitFrames(data, state);
          assert.equal(split.consumed, data.length, `${entry.name}: whole frames`);
          for (const frame of split.frames) messages.push(decoder.decode(frame, state, FIX.time));
          state.uniqueId ??= uniqueId;
        }
      } else {
        const query = Object.fromEntries(new URLSearchParams(frames.report(uniqueId, FIX, 1).toString('latin1')));
        messages.push(decodeOsmAnd({ query }, FIX.time));
      }
      const positions = messages.flatMap((message) => message.positions);
      assert.equal(positions.length, 1, entry.name);
      assert.ok(Math.abs(positions[0]!.latitude - FIX.latitude) < 1e-3 && Math.abs(positions[0]!.longitude - FIX.longitude) < 1e-3, entry.name);
      const identified = messages.map((message) => message.uniqueId).filter((id) => id !== undefined);
      assert.ok(identified.length === 0 || identified.some((id) => id.replace(/^0+/, '') === uniqueId.replace(/^0+/, '')), `${entry.name}: names ${uniqueId}`);
    }
  });

  it('ingestion owns the device link: nothing under ingest/ or protocols/ imports commands', () => {
    for (const folder of ['src/services/tracking/ingest', 'src/services/tracking/protocols']) {
      for (const file of readdirSync(folder, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts'))) {
        assert.doesNotMatch(readFileSync(path.join(folder, file), 'utf8'), /from '(\.\.\/)+commands\//, `${folder}/${file}`);
      }
    }
  });

  it('a process that runs no device listener loads no decoder, and the server never loads a simulated tracker', () => {
    // What a process loads, read back from the module loader: the server as main builds it (auth only here), then the
    // listeners of every protocol started.
    const script = `
      import { registerHooks } from 'node:module';
      const loaded = new Set();
      registerHooks({ resolve: (specifier, context, next) => { const result = next(specifier, context); loaded.add(result.url); return result; } });
      const protocols = () => [...loaded].filter((url) => url.includes('/tracking/protocols/')).map((url) => url.replace(/.*\\/protocols\\//, ''));
      const { createServer } = await import('./src/server.ts');
      const { loadConfig } = await import('./src/config.ts');
      const server = await createServer(loadConfig({ SERVICES: 'auth', DATABASE_URL: 'sqlite::memory:', DATA_DIR: process.env.DATA_DIR, METRICS_PORT: '0' }));
      const auth = protocols();
      await server.close();
      const { DeviceListeners } = await import('./src/services/tracking/ingest/listeners.ts');
      const { DEVICE_PROTOCOLS } = await import('./src/services/tracking/protocols/registry.ts');
      const listeners = new DeviceListeners({ sink: {}, host: '127.0.0.1', idleTimeoutMs: 1000, connectionsPerIp: 1, log: { child: () => ({}) }, logLevel: 'silent' });
      for (const protocol of DEVICE_PROTOCOLS) await listeners.listen(protocol, 0);
      await listeners.close();
      console.log(JSON.stringify({ auth, listening: protocols() }));
    `;
    const dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-graph-'));
    try {
      const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, DATA_DIR: dataDir } });
      const { auth, listening } = JSON.parse(output.trim().split('\n').at(-1)!) as { auth: string[]; listening: string[] };
      const inFolders = (files: string[], module: string) => files.filter((file) => file.endsWith(`/${module}.ts`)).map((file) => file.split('/')[0]).sort();
      assert.deepEqual(inFolders(auth, 'decoder'), [], 'no decoder in an auth-only process');
      assert.deepEqual(inFolders(listening, 'decoder'), [...DEVICE_PROTOCOLS].sort(), 'every decoder where its listener starts');
      assert.deepEqual(inFolders(listening, 'simulator'), [], 'no simulated tracker in the server');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('the socket scenarios of tcp.test.ts cover every entry with a frame decoder', () => {
    const framed = PROTOCOL_REGISTRY.filter((entry) => 'decoder' in entry).map((entry) => entry.name);
    assert.deepEqual(TCP_SCENARIOS.map((scenario) => scenario.protocol).sort(), [...framed].sort());
  });
});
