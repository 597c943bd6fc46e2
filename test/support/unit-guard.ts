/**
 * Loaded first by `npm run test:unit` (test/tiers.ts) in the process that runs the unit files: one that opens a
 * listener, a connection, a UDP socket or a child process, even through the code under test, fails
 * with the reason instead of slowing the tier down. Such a file belongs to the server tier.
 */
import childProcess from 'node:child_process';
import dgram from 'node:dgram';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

function refuse(what: string): never {
  throw new Error(`A unit test file ${what}, which only the server tier does (docs/testing.md): list the file in SERVER_TIER_FILES in test/tiers.ts`);
}

net.Server.prototype.listen = function listen() { refuse('opens a listener'); };
net.Socket.prototype.connect = function connect() { refuse('opens a connection'); };
dgram.Socket.prototype.bind = function bind() { refuse('binds a UDP socket'); };
for (const name of ['spawn', 'exec', 'execFile', 'fork', 'spawnSync', 'execSync', 'execFileSync']) {
  Object.assign(childProcess, { [name]: () => refuse('starts a child process') });
}
syncBuiltinESMExports();
