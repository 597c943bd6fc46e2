// Minimal DER encoder for test certificates: just enough X.509 v3 for Apple- and Google-style chains and local TLS servers.
// No X.509 builder is a declared dependency, so the tests carry their own.
import { X509Certificate, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';

function encodeLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), encodeLength(body.length), body]);
}

const sequence = (...items: Buffer[]): Buffer => tlv(0x30, ...items);
const set = (...items: Buffer[]): Buffer => tlv(0x31, ...items);
const explicit = (tagNumber: number, content: Buffer): Buffer => tlv(0xa0 + tagNumber, content);
const octetString = (content: Buffer): Buffer => tlv(0x04, content);
const bitString = (content: Buffer): Buffer => tlv(0x03, Buffer.from([0]), content);
const utf8String = (text: string): Buffer => tlv(0x0c, Buffer.from(text, 'utf8'));
const derNull = (): Buffer => Buffer.from([0x05, 0x00]);
const derTrue = (): Buffer => Buffer.from([0x01, 0x01, 0xff]);

function integer(value: number): Buffer {
  const bytes: number[] = [];
  for (let rest = value; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  if (bytes.length === 0 || (bytes[0] ?? 0) >= 0x80) bytes.unshift(0);
  return tlv(0x02, Buffer.from(bytes));
}

function objectIdentifier(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const base128: number[] = [arc & 0x7f];
    for (let remaining = Math.floor(arc / 128); remaining > 0; remaining = Math.floor(remaining / 128)) {
      base128.unshift((remaining & 0x7f) | 0x80);
    }
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** RFC 5280: UTCTime through 2049, GeneralizedTime after. */
function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return date.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`));
}

const commonName = (name: string): Buffer => sequence(set(sequence(objectIdentifier('2.5.4.3'), utf8String(name))));

function signatureAlgorithm(signingKey: KeyObject): Buffer {
  if (signingKey.asymmetricKeyType === 'ec') return sequence(objectIdentifier('1.2.840.10045.4.3.2')); // ecdsa-with-SHA256
  if (signingKey.asymmetricKeyType === 'rsa') return sequence(objectIdentifier('1.2.840.113549.1.1.11'), derNull()); // sha256WithRSAEncryption
  throw new Error(`unsupported signing key type ${signingKey.asymmetricKeyType}`);
}

export interface CertificateSpec {
  subject: string;
  subjectPublicKey: KeyObject;
  issuer: string;
  issuerPrivateKey: KeyObject;
  serialNumber: number;
  notBefore: Date;
  notAfter: Date;
  isCertificateAuthority: boolean;
  /** Marker extensions with a NULL value, the way Apple flags its WWDR intermediates and App Store leaves. */
  markerExtensionOids?: string[];
  /** Subject alternative names of a TLS server certificate: host names and IPv4 addresses. */
  altNames?: { dns?: string[]; ip?: string[] };
}

/** The subjectAltName extension: dNSName is [2] IA5String, iPAddress is [7] OCTET STRING, both implicit. */
function subjectAltName(names: NonNullable<CertificateSpec['altNames']>): Buffer {
  const dns = (names.dns ?? []).map((name) => tlv(0x82, Buffer.from(name, 'ascii')));
  const ip = (names.ip ?? []).map((address) => tlv(0x87, Buffer.from(address.split('.').map(Number))));
  return sequence(objectIdentifier('2.5.29.17'), octetString(sequence(...dns, ...ip)));
}

export function createCertificate(spec: CertificateSpec): X509Certificate {
  const basicConstraints = sequence(
    objectIdentifier('2.5.29.19'),
    derTrue(), // critical
    octetString(spec.isCertificateAuthority ? sequence(derTrue()) : sequence()),
  );
  const markers = (spec.markerExtensionOids ?? []).map((oid) => sequence(objectIdentifier(oid), octetString(derNull())));
  const altNames = spec.altNames ? [subjectAltName(spec.altNames)] : [];
  const algorithm = signatureAlgorithm(spec.issuerPrivateKey);
  const toBeSigned = sequence(
    explicit(0, integer(2)), // v3
    integer(spec.serialNumber),
    algorithm,
    commonName(spec.issuer),
    sequence(time(spec.notBefore), time(spec.notAfter)),
    commonName(spec.subject),
    spec.subjectPublicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(basicConstraints, ...markers, ...altNames)),
  );
  const signature = sign('sha256', toBeSigned, spec.issuerPrivateKey);
  return new X509Certificate(sequence(toBeSigned, algorithm, bitString(signature)));
}
