import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createServer } from '../../src/server.ts';
import { PASSWORD } from '../services/auth/support/auth.ts';
import { eventually } from '../support/eventually.ts';
import { outboxMails } from '../support/outbox.ts';
import { NO_DEVICE_LISTENERS, NO_METRICS } from '../support/server.ts';

const mode = (file: string) => statSync(file).mode & 0o777;
const SECRET_FILES = ['trackstack.db', 'trackstack.db-wal', 'trackstack.db-shm', 'jwt-private.pem', 'internal-token', 'totp-encryption-key'];

describe('DATA_DIR on disk', () => {
  let root: string;
  let dataDir: string;
  let umask: number;
  before(() => {
    // The usual umask: without the fix, files come out 0644 and folders 0755.
    umask = process.umask(0o022);
    root = mkdtempSync(path.join(tmpdir(), 'trackstack-data-dir-'));
    dataDir = path.join(root, 'not-yet', 'data');
  });
  after(() => {
    process.umask(umask);
    rmSync(root, { recursive: true, force: true });
  });

  /**
   * Runs the all-in-one server with its defaults (SQLite in DATA_DIR, generated keys, the mail
   * outbox) until a mail has been written, then `check`s while it still runs (closing SQLite removes
   * the -wal and -shm files).
   */
  async function whileRunning(check: () => void): Promise<void> {
    const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', RATE_LIMITS: 'off', ...NO_DEVICE_LISTENERS, ...NO_METRICS });
    const server = await createServer(config);
    try {
      const email = `user-${Date.now()}@example.com`;
      const registered = await server.app.inject({ method: 'POST', url: '/api/auth/register', payload: { email, password: PASSWORD, name: 'x', termsPrivacyAccepted: true } });
      assert.equal(registered.statusCode, 201, registered.body);
      const mails = () => outboxMails(path.join(dataDir, 'outbox'));
      const before = mails().length;
      await eventually(() => mails().length > before, 'a mail in the outbox');
      check();
    } finally {
      await server.close();
    }
  }

  it('creates DATA_DIR and the outbox 0700, the database with its -wal and -shm, the keys and the mails 0600', async () => {
    await whileRunning(() => {
      assert.equal(mode(dataDir), 0o700);
      assert.equal(mode(path.join(dataDir, 'outbox')), 0o700);
      for (const file of SECRET_FILES) assert.equal(mode(path.join(dataDir, file)), 0o600, file);
      for (const mail of outboxMails(path.join(dataDir, 'outbox'))) assert.equal(mode(mail), 0o600, mail);
    });
  });

  it('narrows files and the outbox that an older version or a copy left readable by others; DATA_DIR keeps its mode', async () => {
    for (const file of ['trackstack.db', 'jwt-private.pem', 'internal-token', 'totp-encryption-key']) chmodSync(path.join(dataDir, file), 0o644);
    chmodSync(path.join(dataDir, 'outbox'), 0o755);
    chmodSync(dataDir, 0o750);
    await whileRunning(() => {
      for (const file of SECRET_FILES) assert.equal(mode(path.join(dataDir, file)), 0o600, file);
      assert.equal(mode(path.join(dataDir, 'outbox')), 0o700);
      assert.equal(mode(dataDir), 0o750, 'an existing DATA_DIR may be a mount point: the operator owns its mode');
    });
  });
});
