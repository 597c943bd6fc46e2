import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import path from 'node:path';
import { randomToken } from '../../platform/crypto.ts';
import { readOrCreateSecret } from '../../platform/secrets.ts';

const VERSION = 'v1';

/**
 * Keys the auth module derives (HKDF-SHA256) from one secret: TOTP_ENCRYPTION_KEY, else a secret
 * generated into DATA_DIR on first start. Losing it makes enabled TOTP secrets unreadable.
 */
export class AuthKeys {
  private readonly totpKey: Buffer;
  private readonly codeKey: Buffer;
  private readonly refreshSuccessorKey: Buffer;

  constructor(secret: string) {
    this.totpKey = derive(secret, 'trackstack totp secret encryption');
    this.codeKey = derive(secret, 'trackstack verification code digest');
    this.refreshSuccessorKey = derive(secret, 'trackstack refresh token successor');
  }

  static load(configured: string | undefined, dataDir: string): AuthKeys {
    return new AuthKeys(configured ?? readOrCreateSecret(path.join(dataDir, 'totp-encryption-key'), () => randomToken(32)));
  }

  /** AES-256-GCM; `context` (e.g. the user id) is authenticated, so a sealed value cannot move to another row. */
  seal(plain: Buffer, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.totpKey, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return [VERSION, iv, body, cipher.getAuthTag()].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
  }

  /** Throws when the value was not sealed with this key and context. */
  open(sealed: string, context: string): Buffer {
    const [version, iv, body, tag] = sealed.split('.');
    if (version !== VERSION || iv === undefined || body === undefined || tag === undefined) throw new Error('not a sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.totpKey, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]);
  }

  /** A 6-digit code has too little entropy for a plain hash; a keyed digest keeps a database leak from revealing it. */
  codeDigest(tokenHash: string, code: string): string {
    return createHmac('sha256', this.codeKey).update(`${tokenHash}:${code}`).digest('base64url');
  }

  /**
   * The refresh token that replaces `token` when it is rotated: derived rather than random, so a
   * replay within the grace gets the same successor although no raw token is stored anywhere. Only
   * the holder of this key can compute it; a database copy alone reveals no token.
   */
  refreshSuccessor(token: string): string {
    return createHmac('sha256', this.refreshSuccessorKey).update(token).digest('base64url');
  }
}

function derive(secret: string, info: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'trackstack-auth', info, 32));
}
