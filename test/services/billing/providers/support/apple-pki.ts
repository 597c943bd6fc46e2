// An Apple-shaped signing chain (root CA -> WWDR-style intermediate -> App Store leaf) generated per test run.
import { generateKeyPairSync, sign } from 'node:crypto';
import { createCertificate } from '../../../../support/x509.ts';

/** SignedDataVerifier requires these marker extensions on the intermediate and the leaf. */
export const APPLE_INTERMEDIATE_MARKER_OID = '1.2.840.113635.100.6.2.1';
export const APPLE_LEAF_MARKER_OID = '1.2.840.113635.100.6.11.1';

const DAY_MS = 24 * 60 * 60 * 1000;

export interface AppleTestPki {
  /** DER, as SignedDataVerifier takes its trusted roots. */
  rootCertificate: Buffer;
  notAfter: Date;
  /** Compact JWS, ES256, with header x5c [leaf, intermediate, root] like the App Store's signed data. */
  signJws(payload: object): string;
}

export function createAppleTestPki(name: string, now: Date): AppleTestPki {
  const generate = () => generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const rootKeys = generate();
  const intermediateKeys = generate();
  const leafKeys = generate();
  const notBefore = new Date(now.getTime() - DAY_MS);
  const notAfter = new Date(now.getTime() + 365 * DAY_MS);
  const validity = { notBefore, notAfter };

  const rootName = `${name} Root CA`;
  const intermediateName = `${name} Worldwide Developer Relations`;
  const root = createCertificate({
    ...validity,
    subject: rootName,
    subjectPublicKey: rootKeys.publicKey,
    issuer: rootName,
    issuerPrivateKey: rootKeys.privateKey,
    serialNumber: 1,
    isCertificateAuthority: true,
  });
  const intermediate = createCertificate({
    ...validity,
    subject: intermediateName,
    subjectPublicKey: intermediateKeys.publicKey,
    issuer: rootName,
    issuerPrivateKey: rootKeys.privateKey,
    serialNumber: 2,
    isCertificateAuthority: true,
    markerExtensionOids: [APPLE_INTERMEDIATE_MARKER_OID],
  });
  const leaf = createCertificate({
    ...validity,
    subject: `${name} App Store Signing`,
    subjectPublicKey: leafKeys.publicKey,
    issuer: intermediateName,
    issuerPrivateKey: intermediateKeys.privateKey,
    serialNumber: 3,
    isCertificateAuthority: false,
    markerExtensionOids: [APPLE_LEAF_MARKER_OID],
  });
  const x5c = [leaf, intermediate, root].map((certificate) => certificate.raw.toString('base64'));

  return {
    rootCertificate: root.raw,
    notAfter,
    signJws(payload) {
      const header = Buffer.from(JSON.stringify({ alg: 'ES256', x5c })).toString('base64url');
      const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
      // JWS wants the raw r||s form, not the DER signature node:crypto produces by default.
      const signature = sign('sha256', Buffer.from(`${header}.${body}`), { key: leafKeys.privateKey, dsaEncoding: 'ieee-p1363' });
      return `${header}.${body}.${signature.toString('base64url')}`;
    },
  };
}
