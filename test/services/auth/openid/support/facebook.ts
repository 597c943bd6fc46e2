import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FacebookUser {
  id: string;
  name?: string;
  email?: string;
}

interface IssuedCode {
  user: FacebookUser;
  redirectUri: string;
  challenge: string;
}

/**
 * Plays Facebook's login dialog, token endpoint and Graph API /me on a local port, checking what the
 * real ones check: the app's id and secret, the redirect URI, PKCE, single-use codes and appsecret_proof.
 */
export class FakeFacebook {
  readonly url: string;
  readonly appId: string;
  readonly appSecret: string;
  /** Who signs in at the next dialog visit, or 'decline'. */
  nextLogin: FacebookUser | 'decline' = 'decline';
  /** The token requests received, as sent. */
  readonly tokenRequests: URLSearchParams[] = [];
  private readonly server: Server;
  private readonly codes = new Map<string, IssuedCode>();
  private readonly tokens = new Map<string, FacebookUser>();

  private constructor(server: Server, url: string, app: { appId: string; appSecret: string }) {
    this.server = server;
    this.url = url;
    this.appId = app.appId;
    this.appSecret = app.appSecret;
  }

  static async start(app: { appId: string; appSecret: string }): Promise<FakeFacebook> {
    let handle: (request: IncomingMessage, response: ServerResponse) => Promise<void> = async () => undefined;
    const server = createServer((request, response) => {
      handle(request, response).catch((error: unknown) => {
        response.statusCode = 500;
        response.end(String(error));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const facebook = new FakeFacebook(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, app);
    handle = (request, response) => facebook.route(request, response);
    return facebook;
  }

  /** The OIDC_FACEBOOK_* variables that point the server here. */
  get env(): Record<string, string> {
    return {
      OIDC_FACEBOOK_CLIENT_ID: this.appId,
      OIDC_FACEBOOK_CLIENT_SECRET: this.appSecret,
      OIDC_FACEBOOK_AUTH_URL: `${this.url}/v19.0/dialog/oauth`,
      OIDC_FACEBOOK_TOKEN_URL: `${this.url}/v19.0/oauth/access_token`,
      OIDC_FACEBOOK_USERINFO_URL: `${this.url}/me?fields=id,name,email`,
    };
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', this.url);
    if (request.method === 'GET' && url.pathname === '/v19.0/dialog/oauth') return this.dialog(url, response);
    if (request.method === 'POST' && url.pathname === '/v19.0/oauth/access_token') return this.token(request, response);
    if (request.method === 'GET' && url.pathname === '/me') return this.me(request, url, response);
    return graphError(response, 404, 'Unknown path');
  }

  private dialog(url: URL, response: ServerResponse): void {
    const query = url.searchParams;
    const redirectUri = query.get('redirect_uri');
    if (query.get('client_id') !== this.appId || !redirectUri) return graphError(response, 400, 'Invalid app id or redirect_uri');
    if (query.get('response_type') !== 'code' || query.get('code_challenge_method') !== 'S256' || !query.get('code_challenge')) {
      return graphError(response, 400, 'Expected response_type=code with an S256 code_challenge');
    }
    const back = new URL(redirectUri);
    back.searchParams.set('state', query.get('state') ?? '');
    if (this.nextLogin === 'decline') {
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_code', '200');
      back.searchParams.set('error_reason', 'user_denied');
    } else {
      const code = randomBytes(24).toString('base64url');
      this.codes.set(code, { user: this.nextLogin, redirectUri, challenge: query.get('code_challenge') as string });
      back.searchParams.set('code', code);
    }
    // Facebook appends this fragment to its redirects; browsers never send it on.
    response.writeHead(302, { location: `${back.href}#_=_` }).end();
  }

  private async token(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const form = new URLSearchParams(Buffer.concat(chunks).toString());
    this.tokenRequests.push(form);
    if (form.get('client_id') !== this.appId || form.get('client_secret') !== this.appSecret) return graphError(response, 401, 'Invalid client secret');
    const issued = this.codes.get(form.get('code') ?? '');
    this.codes.delete(form.get('code') ?? '');
    if (!issued) return graphError(response, 400, 'This authorization code has been used or is invalid');
    if (form.get('redirect_uri') !== issued.redirectUri) return graphError(response, 400, 'redirect_uri differs from the dialog');
    const challenge = createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url');
    if (challenge !== issued.challenge) return graphError(response, 400, 'The code_verifier does not match the code_challenge');
    const accessToken = randomBytes(24).toString('base64url');
    this.tokens.set(accessToken, issued.user);
    json(response, 200, { access_token: accessToken, token_type: 'bearer', expires_in: 5_183_944 });
  }

  private me(request: IncomingMessage, url: URL, response: ServerResponse): void {
    const token = /^Bearer (\S+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
    const user = this.tokens.get(token);
    if (!user) return graphError(response, 401, 'Invalid OAuth access token');
    const proof = createHmac('sha256', this.appSecret).update(token).digest('hex');
    if (url.searchParams.get('appsecret_proof') !== proof) return graphError(response, 400, 'Invalid appsecret_proof');
    const fields = (url.searchParams.get('fields') ?? 'id').split(',');
    json(response, 200, Object.fromEntries(Object.entries(user).filter(([field]) => fields.includes(field))));
  }
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** Facebook's error body: an object under `error`, not OAuth's string. */
function graphError(response: ServerResponse, status: number, message: string): void {
  json(response, status, { error: { message, type: 'OAuthException', code: status === 401 ? 190 : 100 } });
}
