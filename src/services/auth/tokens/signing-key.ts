import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import path from 'node:path';
import { calculateJwkThumbprint } from 'jose';
import type { JWK } from 'jose';
import { ConfigError } from '../../../config.ts';
import { readOrCreateSecret } from '../../../platform/secrets.ts';

export interface SigningKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** The public half as served in the JWKS. */
  jwk: JWK & { kid: string };
}

/** The Ed25519 key that signs access tokens: JWT_PRIVATE_KEY, else one generated into DATA_DIR once. */
export async function loadSigningKey(pem: string | undefined, dataDir: string): Promise<SigningKey> {
  const text =
    pem ??
    readOrCreateSecret(path.join(dataDir, 'jwt-private.pem'), () =>
      generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    );
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(text);
  } catch {
    throw new ConfigError('JWT_PRIVATE_KEY', 'not a readable private key');
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new ConfigError('JWT_PRIVATE_KEY', `expected an Ed25519 key, got ${privateKey.asymmetricKeyType}`);
  }
  const publicKey = createPublicKey(privateKey);
  const publicJwk = publicKey.export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint(publicJwk);
  return { privateKey, publicKey, jwk: { ...publicJwk, kid, alg: 'EdDSA', use: 'sig' } };
}
