import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** How a host name becomes addresses: the system's resolver, or a test's names. */
export type HostLookup = (hostname: string) => Promise<ResolvedAddress[]>;

const systemLookup: HostLookup = async (hostname) => (await dnsLookup(hostname, { all: true, verbatim: true })) as ResolvedAddress[];

/** RFC 4291's global unicast allocation; everything else in IPv6 (::/96, 100::/64, fec0::/10…) is special. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * Whether `address` is global unicast, by ipaddr.js's classification of the IANA special-purpose
 * registries: anything it names (loopback, private, CGNAT, link-local, TEST-NETs, benchmarking,
 * multicast, NAT64, 6to4, Teredo, discard…) is not. An IPv4-mapped address is judged as the IPv4
 * address a dual-stack socket reaches; translation prefixes (NAT64, 6to4, Teredo) are refused
 * whatever they embed, since a gateway would take the request to that embedded address.
 */
export function isPublicAddress(address: string): boolean {
  if (!isIP(address)) return false;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return false;
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().range() === 'unicast';
    return v6.match(GLOBAL_UNICAST_V6) && v6.range() === 'unicast';
  }
  return parsed.range() === 'unicast';
}

export type UrlVerdict = { ok: true; url: URL; address: ResolvedAddress } | { ok: false; reason: string };

/** What an endpoint answered; its body is read and dropped, the endpoint being a user's choice. */
export type PostResult = { kind: 'refused'; reason: string } | { kind: 'answered'; status: number; retryAfter: string | undefined };

/**
 * The way out to URLs users give (webhooks, Web Push endpoints): a URL is vetted (http(s), no
 * credentials, a host that resolves, and unless `allowPrivate` only global unicast addresses), and a
 * request connects to the very address vetted, so a second resolution cannot move it (DNS rebinding).
 */
export class AddressGuard {
  readonly #allowPrivate: boolean;
  readonly #lookup: HostLookup;

  constructor(options: { allowPrivate: boolean; lookup?: HostLookup | undefined }) {
    this.#allowPrivate = options.allowPrivate;
    this.#lookup = options.lookup ?? systemLookup;
  }

  async vet(raw: string): Promise<UrlVerdict> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return { ok: false, reason: 'not a URL' };
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, reason: 'only http and https URLs' };
    if (url.username || url.password) return { ok: false, reason: 'credentials in the URL are not allowed' };
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    let addresses: ResolvedAddress[];
    if (isIP(host)) {
      addresses = [{ address: host, family: isIP(host) as 4 | 6 }];
    } else {
      try {
        addresses = await this.#lookup(host);
      } catch {
        return { ok: false, reason: `the host ${host} does not resolve` };
      }
    }
    const first = addresses[0];
    if (!first) return { ok: false, reason: `the host ${host} does not resolve` };
    if (!this.#allowPrivate && addresses.some((entry) => !isPublicAddress(entry.address))) {
      return { ok: false, reason: 'the host resolves to a loopback, private, link-local or otherwise non-public address' };
    }
    return { ok: true, url, address: first };
  }

  /** POSTs `body` to `raw` after vetting it now; a network failure rejects. */
  async post(raw: string, headers: Record<string, string>, body: string | Buffer, signal: AbortSignal): Promise<PostResult> {
    const verdict = await this.vet(raw);
    if (!verdict.ok) return { kind: 'refused', reason: verdict.reason };
    const { status, retryAfter } = await postTo(verdict.url, verdict.address, headers, body, signal);
    return { kind: 'answered', status, retryAfter };
  }
}

function postTo(url: URL, address: ResolvedAddress, headers: Record<string, string>, body: string | Buffer, signal: AbortSignal) {
  // Every name resolves to the vetted address; TLS still checks the certificate against the URL's host.
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if (options.all) (callback as unknown as (error: null, addresses: ResolvedAddress[]) => void)(null, [address]);
    else callback(null, address.address, address.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  const sized = { ...headers, 'content-length': String(Buffer.byteLength(body)) };
  return new Promise<{ status: number; retryAfter: string | undefined }>((resolve, reject) => {
    const request = client.request(url, { method: 'POST', headers: sized, lookup, signal, agent: false }, (response) => {
      // The answer's body is not needed; reading it lets the socket close cleanly.
      response.resume();
      response.on('end', () => {
        const retryAfter = response.headers['retry-after'];
        resolve({ status: response.statusCode ?? 0, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter });
      });
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}
