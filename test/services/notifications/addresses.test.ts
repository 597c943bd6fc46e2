import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AddressGuard, isPublicAddress } from '../../../src/services/notifications/channels/addresses.ts';
import type { HostLookup } from '../../../src/services/notifications/channels/addresses.ts';

/** One address in each range that is not global unicast, and the range it stands for. */
const NOT_PUBLIC: [string, string][] = [
  ['0.0.0.0', '0.0.0.0/8 "this network"'],
  ['0.1.2.3', '0.0.0.0/8'],
  ['10.1.2.3', '10.0.0.0/8'],
  ['100.64.0.1', '100.64.0.0/10 CGNAT'],
  ['100.127.255.254', '100.64.0.0/10 CGNAT'],
  ['127.0.0.1', '127.0.0.0/8 loopback'],
  ['127.255.0.9', '127.0.0.0/8 loopback'],
  ['169.254.169.254', '169.254.0.0/16 link-local (cloud metadata)'],
  ['172.16.0.1', '172.16.0.0/12'],
  ['172.31.255.255', '172.16.0.0/12'],
  ['192.0.0.8', '192.0.0.0/24 IETF protocol assignments'],
  ['192.0.2.10', '192.0.2.0/24 TEST-NET-1'],
  ['192.88.99.1', '192.88.99.0/24 6to4 relay anycast'],
  ['192.168.1.1', '192.168.0.0/16'],
  ['198.18.0.1', '198.18.0.0/15 benchmarking'],
  ['198.19.255.1', '198.18.0.0/15 benchmarking'],
  ['198.51.100.7', '198.51.100.0/24 TEST-NET-2'],
  ['203.0.113.9', '203.0.113.0/24 TEST-NET-3'],
  ['224.0.0.1', '224.0.0.0/4 multicast'],
  ['239.255.255.250', '224.0.0.0/4 multicast'],
  ['240.0.0.1', '240.0.0.0/4 reserved'],
  ['255.255.255.255', 'broadcast'],
  ['::', ':: unspecified'],
  ['::1', '::1 loopback'],
  ['::7f00:1', '::/96 IPv4-compatible (::127.0.0.1)'],
  ['::808:808', '::/96 IPv4-compatible, even of a public address'],
  ['::ffff:127.0.0.1', '::ffff:0:0/96 IPv4-mapped loopback'],
  ['::ffff:7f00:1', '::ffff:0:0/96 IPv4-mapped loopback, hex'],
  ['::ffff:10.0.0.1', '::ffff:0:0/96 IPv4-mapped private'],
  ['::ffff:169.254.169.254', '::ffff:0:0/96 IPv4-mapped link-local'],
  ['::ffff:0:7f00:1', '::ffff:0:0:0/96 IPv4-translated'],
  ['::ffff:0:808:808', '::ffff:0:0:0/96 IPv4-translated, even of a public address'],
  ['64:ff9b::7f00:1', '64:ff9b::/96 NAT64 of 127.0.0.1'],
  ['64:ff9b::808:808', '64:ff9b::/96 NAT64, even of a public address'],
  ['64:ff9b:1::7f00:1', '64:ff9b:1::/48 local-use NAT64'],
  ['100::1', '100::/64 discard-only'],
  ['2001::1', '2001::/32 Teredo'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001::/32 Teredo'],
  ['2001:2::1', '2001:2::/48 benchmarking'],
  ['2001:db8::1', '2001:db8::/32 documentation'],
  ['2001:10::1', '2001:10::/28 ORCHID'],
  ['2002:7f00:1::', '2002::/16 6to4 of 127.0.0.1'],
  ['2002:808:808::1', '2002::/16 6to4, even of a public address'],
  ['3fff::1', '3fff::/20 documentation'],
  ['5f00::1', '5f00::/16 segment routing'],
  ['fc00::1', 'fc00::/7 unique local'],
  ['fd12:3456::1', 'fc00::/7 unique local'],
  ['fe80::1', 'fe80::/10 link-local'],
  ['fec0::1', 'fec0::/10 deprecated site-local'],
  ['ff02::1', 'ff00::/8 multicast'],
  ['4000::1', 'outside 2000::/3, unallocated'],
  ['not-an-address', 'not an IP address'],
];

const PUBLIC = ['8.8.8.8', '1.1.1.1', '93.184.215.14', '142.250.74.110', '::ffff:8.8.8.8', '2001:4860:4860::8888', '2606:4700:4700::1111', '2a00:1450:4001:82a::200e'];

describe('which addresses a webhook or Web Push endpoint may reach', () => {
  for (const [address, range] of NOT_PUBLIC) {
    it(`refuses ${address} (${range})`, () => {
      assert.equal(isPublicAddress(address), false);
    });
  }
  it('lets global unicast addresses through', () => {
    for (const address of PUBLIC) assert.equal(isPublicAddress(address), true, address);
  });

  it('refuses a URL when any address of its host is not public, and allows it all with allowPrivate', async () => {
    const names: Record<string, string[]> = {
      'public.test': ['8.8.8.8', '2001:4860:4860::8888'],
      'mixed.test': ['8.8.8.8', '::ffff:127.0.0.1'],
      'nat64.test': ['64:ff9b::a00:1'],
    };
    const lookup: HostLookup = async (host) => {
      const addresses = names[host];
      if (!addresses) throw new Error(`ENOTFOUND ${host}`);
      return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
    const strict = new AddressGuard({ allowPrivate: false, lookup });
    const verdict = await strict.vet('https://public.test/hook');
    assert.deepEqual(verdict.ok && verdict.address, { address: '8.8.8.8', family: 4 });
    for (const url of ['https://mixed.test/hook', 'https://nat64.test/hook', 'http://[64:ff9b::7f00:1]/x', 'http://[2002:7f00:1::]/x', 'http://[::ffff:7f00:1]/x']) {
      const refused = await strict.vet(url);
      assert.deepEqual(refused, { ok: false, reason: 'the host resolves to a loopback, private, link-local or otherwise non-public address' }, url);
    }
    assert.deepEqual(await strict.vet('https://unknown.test/hook'), { ok: false, reason: 'the host unknown.test does not resolve' });
    const open = new AddressGuard({ allowPrivate: true, lookup });
    assert.equal((await open.vet('https://mixed.test/hook')).ok, true);
  });
});
