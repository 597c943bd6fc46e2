// Local stand-ins for the push providers that check what the real ones check: the FCM OAuth token endpoint
// (RS256 JWT-bearer assertion) and HTTP v1 send, APNs over HTTP/2 with TLS (ES256 provider token), and a
// Web Push service (VAPID JWT, RFC 8291 aes128gcm decryption).
import { createDecipheriv, createECDH, generateKeyPairSync, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import type { ECDH } from 'node:crypto';
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { decodeProtectedHeader, importJWK, jwtVerify } from 'jose';
import { createCertificate } from './x509.ts';

/** A test clock shared by a sender and its fake, so token ages can be moved forward without waiting. */
export interface TestClock {
  now(): number;
  advance(ms: number): void;
}

export function testClock(): TestClock {
  let offset = 0;
  return { now: () => Date.now() + offset, advance: (ms) => void (offset += ms) };
}

/** An answer a fake gives instead of its normal one, for the next request. */
interface ScriptedFailure {
  status: number;
  headers: Record<string, string>;
  body: string;
}

class FailureScript {
  readonly #queue: ScriptedFailure[] = [];
  push(status: number, body: string, headers: Record<string, string>): void {
    this.#queue.push({ status, body, headers });
  }
  next(): ScriptedFailure | undefined {
    return this.#queue.shift();
  }
}

async function readBody(request: IncomingMessage | http2.Http2ServerRequest): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function answer(response: ServerResponse | http2.Http2ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  for (const [name, value] of Object.entries({ 'content-type': 'application/json', ...headers })) response.setHeader(name, value);
  response.statusCode = status;
  response.end(text);
}

async function listen(server: http.Server | http2.Http2SecureServer): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function closeServer(server: http.Server | http2.Http2SecureServer): Promise<void> {
  if ('closeAllConnections' in server) server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

// ---------------------------------------------------------------------------------------------------------------
// RFC 8291: the user agent's side of Web Push message encryption.

const AES128GCM_HEADER_MIN = 16 + 4 + 1;
const TAG_LENGTH = 16;

export interface PushReceiverKeys {
  /** The browser's P-256 key pair (the subscription's p256dh is its public half). */
  ecdh: ECDH;
  authSecret: Buffer;
}

/** The key schedule of RFC 8291 §3.3–3.4 and RFC 8188 §2.2, exposed so the published intermediate values can be checked. */
export function webPushKeySchedule(receiver: PushReceiverKeys, senderPublicKey: Buffer, salt: Buffer) {
  const ecdhSecret = receiver.ecdh.computeSecret(senderPublicKey);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), receiver.ecdh.getPublicKey(), senderPublicKey]);
  const ikm = Buffer.from(hkdfSync('sha256', ecdhSecret, receiver.authSecret, keyInfo, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  return { ecdhSecret, keyInfo, ikm, cek, nonce };
}

/** Decrypts an aes128gcm body (RFC 8188 records) sent to `receiver`; throws when any check fails. */
export function decryptWebPush(body: Buffer, receiver: PushReceiverKeys): Buffer {
  if (body.length < AES128GCM_HEADER_MIN) throw new Error('body shorter than the aes128gcm header');
  const salt = body.subarray(0, 16);
  const recordSize = body.readUInt32BE(16);
  const keyIdLength = body[20] as number;
  const senderPublicKey = body.subarray(21, 21 + keyIdLength);
  if (keyIdLength !== 65 || senderPublicKey[0] !== 4) throw new Error('keyid is not an uncompressed P-256 public key');
  if (recordSize < TAG_LENGTH + 2) throw new Error(`record size ${recordSize} too small`);
  const { cek, nonce } = webPushKeySchedule(receiver, senderPublicKey, salt);
  const records = body.subarray(21 + keyIdLength);
  if (records.length === 0) throw new Error('no records');
  const plaintexts: Buffer[] = [];
  for (let offset = 0, sequence = 0; offset < records.length; offset += recordSize, sequence += 1) {
    const record = records.subarray(offset, offset + recordSize);
    const last = offset + recordSize >= records.length;
    const recordNonce = Buffer.from(nonce);
    // The record sequence number is XORed into the nonce's low bytes (RFC 8188 §2.3); 32 bits cover any body here.
    recordNonce.writeUInt32BE((recordNonce.readUInt32BE(8) ^ sequence) >>> 0, 8);
    const decipher = createDecipheriv('aes-128-gcm', cek, recordNonce);
    decipher.setAuthTag(record.subarray(record.length - TAG_LENGTH));
    const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - TAG_LENGTH)), decipher.final()]);
    let end = padded.length - 1;
    while (end >= 0 && padded[end] === 0) end -= 1;
    if (padded[end] !== (last ? 2 : 1)) throw new Error('bad padding delimiter');
    plaintexts.push(padded.subarray(0, end));
  }
  return Buffer.concat(plaintexts);
}

// ---------------------------------------------------------------------------------------------------------------
// Web Push service.

export interface WebPushSubscriptionJson {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export interface ReceivedWebPush {
  endpoint: string;
  plaintext: string;
  ttl: number;
  urgency: string | undefined;
  topic: string | undefined;
  vapidSubject: string;
}

export interface WebPushService {
  origin: string;
  /** A browser subscribing with the application server's public key, as PushManager.subscribe does. */
  subscribe(applicationServerKey: string): WebPushSubscriptionJson;
  /** The service answers `status` (404 or 410) for this subscription from now on. */
  expire(endpoint: string, status?: 404 | 410): void;
  failNext(status: number, body?: string, headers?: Record<string, string>): void;
  received: ReceivedWebPush[];
  /** Requests refused by the checks, with the reason. */
  refused: { status: number; reason: string }[];
  close(): Promise<void>;
}

interface WebPushSubscriptionState {
  applicationServerKey: string;
  keys: PushReceiverKeys;
  goneStatus?: number;
}

const MAX_VAPID_LIFETIME_S = 24 * 60 * 60;

export async function startWebPushService(): Promise<WebPushService> {
  const subscriptions = new Map<string, WebPushSubscriptionState>();
  const failures = new FailureScript();
  const received: ReceivedWebPush[] = [];
  const refused: { status: number; reason: string }[] = [];
  let origin = '';

  const refuse = (response: ServerResponse, status: number, reason: string) => {
    refused.push({ status, reason });
    answer(response, status, { reason });
  };

  /** RFC 8292 §3: `vapid t=<JWT>, k=<public key>`; the JWT is ES256 with aud = the push resource's origin, exp ≤ 24 h, sub. */
  const checkVapid = async (header: string | undefined, expectedKey: string): Promise<string> => {
    const match = /^vapid\s+(.*)$/i.exec(header ?? '');
    if (!match) throw new VapidRefusal(401, 'Authorization is not a vapid scheme');
    const params = new Map(
      (match[1] as string).split(',').map((part) => {
        const [name, ...rest] = part.trim().split('=');
        return [name?.trim() ?? '', rest.join('=').trim()] as const;
      }),
    );
    const token = params.get('t');
    const key = params.get('k');
    if (!token || !key) throw new VapidRefusal(401, 'vapid needs t and k');
    if (key !== expectedKey) throw new VapidRefusal(403, 'k is not the applicationServerKey of the subscription');
    const point = Buffer.from(key, 'base64url');
    if (point.length !== 65 || point[0] !== 4) throw new VapidRefusal(401, 'k is not an uncompressed P-256 key');
    const publicKey = await importJWK(
      { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') },
      'ES256',
    );
    try {
      const { payload } = await jwtVerify(token, publicKey, { algorithms: ['ES256'], audience: origin, requiredClaims: ['exp', 'sub'] });
      if ((payload.exp as number) > Date.now() / 1000 + MAX_VAPID_LIFETIME_S + 60) throw new Error('exp more than 24 h ahead');
      if (typeof payload.sub !== 'string' || !/^(mailto:[^\s@]+@[^\s@]+|https:\/\/[^\s/]+.*)$/.test(payload.sub)) {
        throw new Error('sub is not a mailto: address or an https: URL');
      }
      return payload.sub;
    } catch (error) {
      throw new VapidRefusal(401, `VAPID JWT refused: ${(error as Error).message}`);
    }
  };

  const server = http.createServer((request, response) => {
    void (async () => {
      const body = await readBody(request);
      const failure = failures.next();
      if (failure) return answer(response, failure.status, failure.body, failure.headers);
      const endpoint = `${origin}${request.url ?? ''}`;
      const subscription = subscriptions.get(endpoint);
      if (request.method !== 'POST' || !subscription) return refuse(response, 404, 'no such subscription');
      if (subscription.goneStatus) return answer(response, subscription.goneStatus, { reason: 'subscription expired' });
      let vapidSubject: string;
      try {
        vapidSubject = await checkVapid(request.headers.authorization, subscription.applicationServerKey);
      } catch (error) {
        if (error instanceof VapidRefusal) return refuse(response, error.status, error.message);
        throw error;
      }
      const ttl = request.headers.ttl;
      if (typeof ttl !== 'string' || !/^\d+$/.test(ttl)) return refuse(response, 400, 'TTL header missing');
      if (request.headers['content-encoding'] !== 'aes128gcm') return refuse(response, 415, 'Content-Encoding must be aes128gcm');
      if (body.length > 4096) return refuse(response, 413, 'payload too large');
      let plaintext: Buffer;
      try {
        plaintext = decryptWebPush(body, subscription.keys);
      } catch (error) {
        return refuse(response, 400, `cannot decrypt: ${(error as Error).message}`);
      }
      const header = (name: string) => (typeof request.headers[name] === 'string' ? (request.headers[name] as string) : undefined);
      received.push({ endpoint, plaintext: plaintext.toString('utf8'), ttl: Number(ttl), urgency: header('urgency'), topic: header('topic'), vapidSubject });
      response.writeHead(201, { location: `${endpoint}/messages/${randomUUID()}` });
      response.end();
    })();
  });
  origin = `http://127.0.0.1:${await listen(server)}`;

  return {
    origin,
    subscribe(applicationServerKey) {
      const ecdh = createECDH('prime256v1');
      ecdh.generateKeys();
      const authSecret = randomBytes(16);
      const endpoint = `${origin}/push/${randomUUID()}`;
      subscriptions.set(endpoint, { applicationServerKey, keys: { ecdh, authSecret } });
      return { endpoint, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: authSecret.toString('base64url') } };
    },
    expire(endpoint, status = 410) {
      const subscription = subscriptions.get(endpoint);
      if (subscription) subscription.goneStatus = status;
    },
    failNext: (status, body = '', headers = {}) => failures.push(status, body, headers),
    received,
    refused,
    close: () => closeServer(server),
  };
}

class VapidRefusal extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// FCM HTTP v1 and Google's OAuth token endpoint.

export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

export interface ReceivedFcmMessage {
  token: string;
  message: {
    token: string;
    notification?: { title?: string; body?: string };
    data?: Record<string, string>;
    android?: { collapse_key?: string };
  };
}

export interface FcmService {
  /** FCM_URL. */
  origin: string;
  /** FCM_SERVICE_ACCOUNT: a service-account JSON whose token_uri is this fake. */
  serviceAccount: string;
  projectId: string;
  /** Access tokens issued so far. */
  accessTokensIssued: number;
  /** Assertions refused by the token endpoint, with the reason. */
  refusedAssertions: string[];
  received: ReceivedFcmMessage[];
  /** The app was uninstalled: 404 UNREGISTERED from now on. */
  unregister(token: string): void;
  /** Every access token issued so far answers 401 from now on, as after a key rotation. */
  revokeAccessTokens(): void;
  failNext(status: number, body?: unknown, headers?: Record<string, string>): void;
  close(): Promise<void>;
}

export interface FcmServiceOptions {
  clock?: TestClock;
  /** expires_in of the access tokens, seconds. */
  accessTokenLifetime?: number;
}

function fcmError(status: number, grpcStatus: string, message: string, details: object[] = []) {
  return { error: { code: status, message, status: grpcStatus, details } };
}

export async function startFcmService(options: FcmServiceOptions = {}): Promise<FcmService> {
  const now = options.clock ? options.clock.now : Date.now;
  const lifetime = options.accessTokenLifetime ?? 3600;
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const projectId = 'trackstack-test';
  const clientEmail = `push-sender@${projectId}.iam.gserviceaccount.com`;
  const accessTokens = new Map<string, number>(); // token → expiry (ms)
  const unregistered = new Set<string>();
  const failures = new FailureScript();
  const refusedAssertions: string[] = [];
  const received: ReceivedFcmMessage[] = [];
  let origin = '';
  let issued = 0;

  const issueToken = async (request: IncomingMessage, response: ServerResponse) => {
    const form = new URLSearchParams((await readBody(request)).toString('utf8'));
    const refuse = (reason: string) => {
      refusedAssertions.push(reason);
      answer(response, 400, { error: 'invalid_grant', error_description: reason });
    };
    if (request.headers['content-type'] !== 'application/x-www-form-urlencoded') return refuse('not a form');
    if (form.get('grant_type') !== JWT_BEARER_GRANT) return refuse('unsupported grant_type');
    const assertion = form.get('assertion') ?? '';
    try {
      const { payload } = await jwtVerify(assertion, publicKey, {
        algorithms: ['RS256'],
        issuer: clientEmail,
        audience: `${origin}/token`,
        requiredClaims: ['iat', 'exp'],
        currentDate: new Date(now()),
      });
      if ((payload.exp as number) - (payload.iat as number) > 3600) throw new Error('assertion lives longer than 1 h');
      if (payload.scope !== FCM_SCOPE) throw new Error(`scope ${String(payload.scope)}`);
    } catch (error) {
      return refuse((error as Error).message);
    }
    const accessToken = `ya29.${randomBytes(24).toString('base64url')}`;
    accessTokens.set(accessToken, now() + lifetime * 1000);
    issued += 1;
    answer(response, 200, { access_token: accessToken, expires_in: lifetime, token_type: 'Bearer' });
  };

  const send = async (request: IncomingMessage, response: ServerResponse) => {
    const body = await readBody(request);
    const failure = failures.next();
    if (failure) return answer(response, failure.status, failure.body, failure.headers);
    const bearer = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    const expiry = bearer ? accessTokens.get(bearer) : undefined;
    if (expiry === undefined || expiry <= now()) {
      return answer(response, 401, fcmError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'));
    }
    if (request.url !== `/v1/projects/${projectId}/messages:send`) {
      return answer(response, 403, fcmError(403, 'PERMISSION_DENIED', 'The caller does not have permission'));
    }
    let message: ReceivedFcmMessage['message'];
    try {
      message = (JSON.parse(body.toString('utf8')) as { message: ReceivedFcmMessage['message'] }).message;
      if (typeof message.token !== 'string') throw new Error('message.token');
      if (message.data && Object.values(message.data).some((value) => typeof value !== 'string')) throw new Error('message.data');
    } catch (error) {
      return answer(response, 400, fcmError(400, 'INVALID_ARGUMENT', `Invalid JSON payload: ${(error as Error).message}`));
    }
    if (!/^[\w:-]{20,}$/.test(message.token)) {
      return answer(
        response,
        400,
        fcmError(400, 'INVALID_ARGUMENT', 'The registration token is not a valid FCM registration token', [
          { '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'INVALID_ARGUMENT' },
          { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'message.token', description: 'Invalid registration token' }] },
        ]),
      );
    }
    if (unregistered.has(message.token)) {
      return answer(
        response,
        404,
        fcmError(404, 'NOT_FOUND', 'Requested entity was not found.', [
          { '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' },
        ]),
      );
    }
    received.push({ token: message.token, message });
    answer(response, 200, { name: `projects/${projectId}/messages/${randomUUID()}` });
  };

  const server = http.createServer((request, response) => {
    const handler = request.method === 'POST' && request.url === '/token' ? issueToken : send;
    handler(request, response).catch((error: unknown) => answer(response, 500, { error: String(error) }));
  });
  origin = `http://127.0.0.1:${await listen(server)}`;
  const serviceAccount = JSON.stringify({
    type: 'service_account',
    project_id: projectId,
    private_key_id: randomBytes(20).toString('hex'),
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
    client_email: clientEmail,
    client_id: '100000000000000000001',
    auth_uri: 'https://accounts.google.com/o/oauth2/auth',
    token_uri: `${origin}/token`,
  });

  return {
    origin,
    serviceAccount,
    projectId,
    get accessTokensIssued() {
      return issued;
    },
    refusedAssertions,
    received,
    unregister: (token) => void unregistered.add(token),
    revokeAccessTokens: () => accessTokens.clear(),
    failNext: (status, body = '', headers = {}) => failures.push(status, typeof body === 'string' ? body : JSON.stringify(body), headers),
    close: () => closeServer(server),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// APNs over HTTP/2 with TLS and token (JWT) authentication.

export interface ReceivedApnsNotification {
  deviceToken: string;
  payload: { aps: { alert?: { title?: string; body?: string }; [key: string]: unknown }; [key: string]: unknown };
  pushType: string;
  collapseId: string | undefined;
  priority: string | undefined;
}

export interface ApnsService {
  /** APNS_URL. */
  origin: string;
  /** The CA that issued the server's certificate (PEM), for the sender's `ca` option. */
  ca: string;
  /** APNS_KEY and friends for a sender trusted by this fake. */
  env: { APNS_KEY: string; APNS_KEY_ID: string; APNS_TEAM_ID: string; APNS_TOPIC: string; APNS_URL: string };
  received: ReceivedApnsNotification[];
  /** Distinct provider tokens that authenticated a request. */
  providerTokens: Set<string>;
  /** HTTP/2 connections accepted. */
  connections: number;
  /** The app was removed from the device: 410 Unregistered from now on. */
  unregister(deviceToken: string): void;
  /** Every provider token seen so far answers 403 ExpiredProviderToken from now on. */
  expireProviderTokens(): void;
  /** Drops every open connection, as APNs does after an idle period or a GOAWAY. */
  dropConnections(): void;
  failNext(status: number, reason: string, headers?: Record<string, string>): void;
  /** The next request gets no answer at all; resolves when it has arrived. */
  stallNext(): Promise<void>;
  close(): Promise<void>;
}

const APNS_PAYLOAD_LIMIT = 4096;
const PROVIDER_TOKEN_MAX_AGE_S = 3600;

function testTlsCredentials(): { ca: string; key: string; cert: string } {
  const now = Date.now();
  const validity = { notBefore: new Date(now - 86_400_000), notAfter: new Date(now + 86_400_000) };
  const caKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const serverKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const caName = 'Trackstack Test Push CA';
  const ca = createCertificate({ ...validity, subject: caName, subjectPublicKey: caKeys.publicKey, issuer: caName, issuerPrivateKey: caKeys.privateKey, serialNumber: 1, isCertificateAuthority: true });
  const leaf = createCertificate({
    ...validity,
    subject: 'localhost',
    subjectPublicKey: serverKeys.publicKey,
    issuer: caName,
    issuerPrivateKey: caKeys.privateKey,
    serialNumber: 2,
    isCertificateAuthority: false,
    altNames: { dns: ['localhost'], ip: ['127.0.0.1'] },
  });
  return { ca: ca.toString(), key: serverKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), cert: leaf.toString() };
}

export async function startApnsService(options: { clock?: TestClock } = {}): Promise<ApnsService> {
  const now = options.clock ? options.clock.now : Date.now;
  const signingKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const keyId = 'ABC123DEFG';
  const teamId = 'DEF123GHIJ';
  const topic = 'com.trackstack.app';
  const unregistered = new Map<string, number>(); // device token → time it was removed (ms)
  const expiredTokens = new Set<string>();
  const providerTokens = new Set<string>();
  const failures = new FailureScript();
  const received: ReceivedApnsNotification[] = [];
  const sessions = new Set<http2.ServerHttp2Session>();
  let connections = 0;
  const tls = testTlsCredentials();

  const reject = (response: http2.Http2ServerResponse, status: number, reason: string, extra: object = {}) =>
    answer(response, status, { reason, ...extra }, { 'apns-id': randomUUID() });

  /** Apple's checks of a provider token: ES256 with our key, kid of the key, iss the team, iat within the last hour. */
  const authenticate = async (authorization: string | undefined): Promise<string | undefined> => {
    const token = /^bearer (\S+)$/i.exec(authorization ?? '')?.[1];
    if (!token) return 'MissingProviderToken';
    if (expiredTokens.has(token)) return 'ExpiredProviderToken';
    try {
      if (decodeProtectedHeader(token).kid !== keyId) return 'InvalidProviderToken';
      const { payload } = await jwtVerify(token, signingKeys.publicKey, { algorithms: ['ES256'], issuer: teamId, requiredClaims: ['iat'], currentDate: new Date(now()) });
      if ((payload.iat as number) < now() / 1000 - PROVIDER_TOKEN_MAX_AGE_S) return 'ExpiredProviderToken';
      if ((payload.iat as number) > now() / 1000 + 60) return 'InvalidProviderToken';
    } catch {
      return 'InvalidProviderToken';
    }
    providerTokens.add(token);
    return undefined;
  };

  let stalled: (() => void) | undefined;
  const handle = async (request: http2.Http2ServerRequest, response: http2.Http2ServerResponse) => {
    const body = await readBody(request);
    if (stalled) {
      stalled();
      stalled = undefined;
      return;
    }
    const failure = failures.next();
    if (failure) return answer(response, failure.status, failure.body, failure.headers);
    const deviceToken = /^\/3\/device\/([0-9a-fA-F]{64,200})$/.exec(request.url)?.[1];
    if (request.method !== 'POST') return reject(response, 405, 'MethodNotAllowed');
    const authProblem = await authenticate(request.headers.authorization);
    if (authProblem) return reject(response, 403, authProblem);
    if (!deviceToken) return reject(response, 400, 'BadDeviceToken');
    const apnsTopic = request.headers['apns-topic'];
    if (!apnsTopic) return reject(response, 400, 'MissingTopic');
    if (apnsTopic !== topic) return reject(response, 400, 'TopicDisallowed');
    const pushType = request.headers['apns-push-type'];
    if (pushType !== 'alert') return reject(response, 400, 'InvalidPushType');
    const collapseId = request.headers['apns-collapse-id'] as string | undefined;
    if (collapseId !== undefined && Buffer.byteLength(collapseId) > 64) return reject(response, 400, 'BadCollapseId');
    if (body.length > APNS_PAYLOAD_LIMIT) return reject(response, 413, 'PayloadTooLarge');
    let payload: ReceivedApnsNotification['payload'];
    try {
      payload = JSON.parse(body.toString('utf8')) as ReceivedApnsNotification['payload'];
      if (typeof payload.aps !== 'object' || payload.aps === null) throw new Error('no aps');
    } catch {
      return reject(response, 400, 'PayloadEmpty');
    }
    const removedAt = unregistered.get(deviceToken.toLowerCase());
    if (removedAt !== undefined) return reject(response, 410, 'Unregistered', { timestamp: removedAt });
    received.push({ deviceToken, payload, pushType, collapseId, priority: request.headers['apns-priority'] as string | undefined });
    response.writeHead(200, { 'apns-id': (request.headers['apns-id'] as string | undefined) ?? randomUUID() });
    response.end();
  };

  const server = http2.createSecureServer({ key: tls.key, cert: tls.cert, allowHTTP1: false }, (request, response) => {
    handle(request, response).catch((error: unknown) => reject(response, 500, `InternalServerError: ${String(error)}`));
  });
  server.on('session', (session) => {
    connections += 1;
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  const origin = `https://127.0.0.1:${await listen(server)}`;

  return {
    origin,
    ca: tls.ca,
    env: {
      APNS_KEY: signingKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      APNS_KEY_ID: keyId,
      APNS_TEAM_ID: teamId,
      APNS_TOPIC: topic,
      APNS_URL: origin,
    },
    received,
    providerTokens,
    get connections() {
      return connections;
    },
    unregister: (deviceToken) => void unregistered.set(deviceToken.toLowerCase(), now()),
    expireProviderTokens: () => providerTokens.forEach((token) => expiredTokens.add(token)),
    dropConnections: () => sessions.forEach((session) => session.destroy()),
    failNext: (status, reason, headers = {}) => failures.push(status, JSON.stringify({ reason }), headers),
    stallNext: () => new Promise<void>((resolve) => (stalled = resolve)),
    close: async () => {
      sessions.forEach((session) => session.destroy());
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
