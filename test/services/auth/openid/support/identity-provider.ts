import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';
import type { Adapter, AdapterPayload } from 'oidc-provider';

/** A person at the identity provider; `email_verified` as the provider sends it (Apple: the string "true"). */
export interface IdpAccount {
  email?: string;
  email_verified?: boolean | string;
  name?: string;
}

export interface IdpClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
}

export interface IdentityProviderOptions {
  client: IdpClient;
  /** A token endpoint in front of oidc-provider's (advertised by discovery instead of it). */
  tokenEndpoint?: TokenEndpointFilter;
}

export interface TokenEndpointFilter {
  /**
   * Checks each token request's form and returns the form to pass on (Apple's token endpoint verifies
   * a client secret that is a JWT); a throw answers invalid_client.
   */
  checkRequest(form: URLSearchParams): Promise<URLSearchParams>;
  /** Changes a successful answer on its way back, when set. */
  changeResponse?: (body: Record<string, unknown>) => Record<string, unknown>;
}

const CHECKED_TOKEN_PATH = '/checked/token';

/**
 * oidc-provider on a local port as the tests' OpenID Connect provider. The login interaction is a URL
 * the test calls: `{interaction}/login?account=<id>` signs that account in and grants the requested
 * scopes; `{interaction}/abort` answers the client with error=access_denied.
 */
export class LocalIdentityProvider {
  readonly issuer: string;
  /** The people who can sign in, by id (their `sub`); tests add and change them. */
  readonly accounts: Map<string, IdpAccount>;
  private readonly server: Server;
  private readonly provider: Provider;
  private readonly options: IdentityProviderOptions;

  private constructor(server: Server, issuer: string, provider: Provider, accounts: Map<string, IdpAccount>, options: IdentityProviderOptions) {
    this.server = server;
    this.issuer = issuer;
    this.provider = provider;
    this.accounts = accounts;
    this.options = options;
  }

  static async start(options: IdentityProviderOptions): Promise<LocalIdentityProvider> {
    let handle: (request: IncomingMessage, response: ServerResponse) => void = (_request, response) => response.end();
    const server = createServer((request, response) => handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const accounts = new Map<string, IdpAccount>();
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const provider = new Provider(issuer, {
      clients: [{ ...options.client, grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_post' }],
      adapter: memoryAdapter(),
      jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'idp-key', alg: 'RS256', use: 'sig' }] },
      cookies: { keys: ['local-identity-provider-cookie-key'] },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], name: ['name'] },
      scopes: ['openid', 'email', 'profile', 'name'],
      // Like Google and Apple, the id_token itself carries the scopes' claims.
      conformIdTokenClaims: false,
      features: { devInteractions: { enabled: false } },
      interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
      ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 600, Grant: 600 },
      findAccount: (_ctx: unknown, id: string) => {
        const account = accounts.get(id);
        return account ? { accountId: id, claims: () => ({ sub: id, ...account }) } : undefined;
      },
    });
    if (options.tokenEndpoint) {
      provider.use(async (ctx, next) => {
        await next();
        if (ctx.path === '/.well-known/openid-configuration') {
          ctx.body = { ...(ctx.body as object), token_endpoint: `${issuer}${CHECKED_TOKEN_PATH}` };
        }
      });
    }
    const idp = new LocalIdentityProvider(server, issuer, provider, accounts, options);
    const callback = provider.callback();
    handle = (request, response) => {
      idp.route(request, response, callback).catch((error: unknown) => {
        response.statusCode = 500;
        response.end(String(error));
      });
    };
    return idp;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async route(request: IncomingMessage, response: ServerResponse, callback: (request: IncomingMessage, response: ServerResponse) => void) {
    const url = new URL(request.url ?? '/', this.issuer);
    if (/^\/interaction\/[^/]+$/.test(url.pathname)) {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('The login page: the test goes on to ./login?account=<id> or ./abort');
      return;
    }
    const interaction = /^\/interaction\/[^/]+\/(login|abort)$/.exec(url.pathname);
    if (interaction) {
      const details = await this.provider.interactionDetails(request, response);
      if (interaction[1] === 'abort') {
        await this.provider.interactionFinished(request, response, { error: 'access_denied', error_description: 'The user declined' });
        return;
      }
      const accountId = url.searchParams.get('account') ?? '';
      const grant = new this.provider.Grant({ accountId, clientId: String(details.params.client_id) });
      grant.addOIDCScope(String(details.params.scope));
      const grantId = await grant.save();
      await this.provider.interactionFinished(request, response, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
      return;
    }
    if (url.pathname === CHECKED_TOKEN_PATH && request.method === 'POST' && this.options.tokenEndpoint) {
      await this.filteredTokenRequest(request, response, this.options.tokenEndpoint);
      return;
    }
    callback(request, response);
  }

  private async filteredTokenRequest(request: IncomingMessage, response: ServerResponse, filter: TokenEndpointFilter): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    let form: URLSearchParams;
    try {
      form = await filter.checkRequest(new URLSearchParams(Buffer.concat(chunks).toString()));
    } catch (error) {
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: 'invalid_client', error_description: String(error) }));
      return;
    }
    const upstream = await fetch(`${this.issuer}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
    const body = (await upstream.json()) as Record<string, unknown>;
    response.writeHead(upstream.status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    response.end(JSON.stringify(upstream.ok && filter.changeResponse ? filter.changeResponse(body) : body));
  }
}

/** oidc-provider's storage for one provider: a Map per model, with the lookups oidc-provider needs. */
function memoryAdapter(): new (model: string) => Adapter {
  const stores = new Map<string, Map<string, AdapterPayload>>();
  return class MemoryAdapter implements Adapter {
    private readonly store: Map<string, AdapterPayload>;

    constructor(model: string) {
      this.store = stores.get(model) ?? new Map();
      stores.set(model, this.store);
    }

    async upsert(id: string, payload: AdapterPayload): Promise<void> {
      this.store.set(id, payload);
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      return this.store.get(id);
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return [...this.store.values()].find((payload) => payload.userCode === userCode);
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return [...this.store.values()].find((payload) => payload.uid === uid);
    }

    async consume(id: string): Promise<void> {
      const payload = this.store.get(id);
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }

    async destroy(id: string): Promise<void> {
      this.store.delete(id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      for (const [id, payload] of this.store) if (payload.grantId === grantId) this.store.delete(id);
    }
  };
}
