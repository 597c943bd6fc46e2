import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { CryptoKey, JWTPayload } from 'jose';

export const KEY_ID = 'issuer-key-1';

/**
 * An issuer that only publishes discovery and its JWKS on a local port, and signs id_tokens as the
 * mobile SDKs receive them from Google.
 */
export class JwksIssuer {
  readonly issuer: string;
  private readonly server: Server;
  private readonly privateKey: CryptoKey;

  private constructor(server: Server, issuer: string, privateKey: CryptoKey) {
    this.server = server;
    this.issuer = issuer;
    this.privateKey = privateKey;
  }

  static async start(): Promise<JwksIssuer> {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: KEY_ID, alg: 'RS256', use: 'sig' }] };
    const server = createServer((request, response) => {
      const path = new URL(request.url ?? '/', 'http://local').pathname;
      const body =
        path === '/.well-known/openid-configuration'
          ? {
              issuer,
              authorization_endpoint: `${issuer}/auth`,
              token_endpoint: `${issuer}/token`,
              jwks_uri: `${issuer}/jwks`,
              response_types_supported: ['code'],
              subject_types_supported: ['public'],
              id_token_signing_alg_values_supported: ['RS256'],
            }
          : path === '/jwks'
            ? jwks
            : undefined;
      response.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? {}));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return new JwksIssuer(server, issuer, privateKey);
  }

  /** An id_token signed with the published key (or `key`), valid for an hour unless the claims say otherwise. */
  sign(claims: JWTPayload & { aud: string }, options: { key?: CryptoKey; kid?: string } = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: this.issuer, iat: now, exp: now + 3600, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: options.kid ?? KEY_ID, typ: 'JWT' })
      .sign(options.key ?? this.privateKey);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
