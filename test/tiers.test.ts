import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { filesOf, importSpecifiers, serverReason, testFiles, tierOf } from './tiers.ts';

const root = path.resolve(import.meta.dirname, '..');

describe('test tiers', () => {
  it('puts every file npm test runs in exactly one tier, and test:unit runs the unit tier', () => {
    const scripts = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    assert.match(scripts.test ?? '', /"test\/\*\*\/\*\.test\.ts"/);
    assert.equal(scripts['test:unit'], 'node test/tiers.ts unit');
    const unit = filesOf('unit');
    const server = filesOf('server');
    assert.deepEqual([...unit, ...server].sort(), testFiles());
    assert.ok(unit.length >= 50, `${unit.length} unit files`);
    assert.ok(unit.includes('test/services/tracking/protocols/gt06.test.ts'));
    assert.ok(unit.includes('test/tiers.test.ts') === false, 'this file starts child processes');
  });

  it('follows the test helpers to a socket, a child process, the server or the test databases', () => {
    assert.equal(serverReason(path.join(root, 'test/services/notifications/push/fcm.test.ts')), 'test/services/notifications/push/fcm.test.ts → test/support/ports.ts → node:net');
    assert.equal(serverReason(path.join(root, 'test/web/auth.test.ts')), 'test/web/auth.test.ts → test/support/browser.ts → test/support/engines.ts');
    assert.equal(serverReason(path.join(root, 'test/services/billing/plans-file.test.ts')), 'test/services/billing/plans-file.test.ts → test/support/processes.ts → node:child_process');
    assert.equal(tierOf('test/services/tracking/positions/formats.test.ts'), 'unit');
    assert.equal(tierOf('test/web/bundle.test.ts'), 'server', 'listed: it builds the web app');
  });

  it('reads static, side-effect, re-exported and dynamic imports, and not the type-only ones Node erases', () => {
    const source = [
      "import assert from 'node:assert/strict';",
      "import {\n  startTestServer,\n  type TestServer,\n} from './support/server.ts';",
      "import type { Socket } from 'node:net';",
      "import type Stream from 'node:stream';",
      "import typebox from 'typebox';",
      "import './support/polyfill.ts';",
      "export { freePort } from './support/ports.ts';",
      "const { spawn } = await import('node:child_process');",
    ].join('\n');
    assert.deepEqual(importSpecifiers(source), ['node:assert/strict', './support/server.ts', 'typebox', './support/polyfill.ts', './support/ports.ts', 'node:child_process']);
  });

  it('fails a unit file that opens a listener, a connection, a UDP socket or a child process through any code', () => {
    const attempts: Record<string, string> = {
      'opens a listener': "(await import('node:http')).createServer().listen(0);",
      'opens a connection': "(await import('node:net')).connect(5432, '127.0.0.1');",
      'binds a UDP socket': "(await import('node:dgram')).createSocket('udp4').bind(0);",
      'starts a child process': "(await import('node:child_process')).execFile('true');",
    };
    for (const [refusal, code] of Object.entries(attempts)) {
      const result = spawnSync(process.execPath, ['--import', './test/support/unit-guard.ts', '--input-type=module', '-e', code], { cwd: root, encoding: 'utf8' });
      assert.notEqual(result.status, 0, refusal);
      assert.match(result.stderr, new RegExp(`A unit test file ${refusal}, which only the server tier does`), refusal);
    }
    const sync = spawnSync(process.execPath, ['--import', './test/support/unit-guard.ts', '--input-type=module', '-e', "import { execFileSync } from 'node:child_process'; execFileSync('true');"], { cwd: root, encoding: 'utf8' });
    assert.match(sync.stderr, /A unit test file starts a child process/);
  });
});
