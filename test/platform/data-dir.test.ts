import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { keepDataDirPrivate } from '../../src/platform/private-files.ts';
import { createServer } from '../../src/server.ts';
import { PASSWORD } from '../services/auth/support/auth.ts';
import { eventually } from '../support/eventually.ts';
import { outboxMails } from '../support/outbox.ts';
import { NO_DEVICE_LISTENERS, NO_METRICS } from '../support/server.ts';

const mode = (file: string) => statSync(file).mode & 0o777;
const SECRET_FILES = ['trackstack.db', 'trackstack.db-wal', 'trackstack.db-shm', 'jwt-private.pem', 'internal-token', 'totp-encryption-key', 'vapid-private.pem'];

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

  it('narrows DATA_DIR, its files and the outbox that an older version or a copy left open to others', async () => {
    for (const file of ['trackstack.db', 'jwt-private.pem', 'internal-token', 'totp-encryption-key', 'vapid-private.pem']) chmodSync(path.join(dataDir, file), 0o644);
    chmodSync(path.join(dataDir, 'outbox'), 0o755);
    chmodSync(dataDir, 0o755);
    await whileRunning(() => {
      for (const file of SECRET_FILES) assert.equal(mode(path.join(dataDir, file)), 0o600, file);
      assert.equal(mode(path.join(dataDir, 'outbox')), 0o700);
      assert.equal(mode(dataDir), 0o700);
    });
  });

  it('leaves a folder shared on purpose as it is: one with the sticky bit, the home folder', () => {
    const shared = mkdtempSync(path.join(root, 'shared-'));
    chmodSync(shared, 0o1777);
    assert.equal(keepDataDirPrivate(shared), undefined);
    assert.equal(statSync(shared).mode & 0o7777, 0o1777);
    const home = mkdtempSync(path.join(root, 'home-'));
    chmodSync(home, 0o755);
    const realHome = process.env.HOME;
    process.env.HOME = home;
    try {
      assert.equal(keepDataDirPrivate(home), undefined);
    } finally {
      process.env.HOME = realHome;
    }
    assert.equal(mode(home), 0o755);
    const own = mkdtempSync(path.join(root, 'own-'));
    chmodSync(own, 0o750);
    assert.equal(keepDataDirPrivate(own), 0o750, 'answers the mode it narrowed, for the log');
    assert.equal(mode(own), 0o700);
  });
});
