import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** Loopback, private, link-local, shared, multicast and otherwise special ranges: no webhook goes there unless allowed. */
const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv6');
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 6) {
    // IPv4 written as IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address it is.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped?.[1]) return PRIVATE.check(mapped[1], 'ipv4');
    return PRIVATE.check(address, 'ipv6');
  }
  return family === 4 ? PRIVATE.check(address, 'ipv4') : true;
}

export type UrlVerdict = { ok: true; url: URL; address: ResolvedAddress } | { ok: false; reason: string };

/**
 * Whether a webhook may be sent to `raw`: http(s), no credentials, a host that resolves, and (unless
 * `allowPrivate`) none of its addresses private. The answer names the address to connect to, so
 * the request goes where the check looked and a second resolution cannot move it (DNS rebinding).
 */
export async function vetWebhookUrl(raw: string, allowPrivate: boolean): Promise<UrlVerdict> {
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
      addresses = (await lookup(host, { all: true, verbatim: true })) as ResolvedAddress[];
    } catch {
      return { ok: false, reason: `the host ${host} does not resolve` };
    }
  }
  const first = addresses[0];
  if (!first) return { ok: false, reason: `the host ${host} does not resolve` };
  if (!allowPrivate && addresses.some((entry) => isPrivateAddress(entry.address))) {
    return { ok: false, reason: 'the host resolves to a loopback, private or link-local address' };
  }
  return { ok: true, url, address: first };
}
