import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sha256 } from '../../../platform/crypto.ts';

export type LegalType = 'terms' | 'privacy';

export interface LegalDocument {
  type: LegalType;
  version: string;
  content: string;
}

const SHIPPED_DIR = path.join(import.meta.dirname, 'documents');
const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/;

/**
 * The terms and the privacy policy: DATA_DIR/legal/terms.md and privacy.md when the operator put
 * them there, else the shipped placeholders. A document's version is the `version:` line of its
 * front matter, else a digest of its text, so any edit asks users to accept again. Read at start.
 */
export class LegalDocuments {
  private readonly documents: Record<LegalType, LegalDocument>;

  constructor(dataDir: string) {
    this.documents = {
      terms: load('terms', dataDir),
      privacy: load('privacy', dataDir),
    };
  }

  get(type: LegalType): LegalDocument {
    return this.documents[type];
  }

  /** The attributes recording that the user accepted the current terms and privacy policy. */
  acceptance(at: Date): Record<string, string> {
    return {
      termsAcceptedVersion: this.documents.terms.version,
      privacyAcceptedVersion: this.documents.privacy.version,
      termsAcceptedAt: at.toISOString(),
    };
  }
}

function load(type: LegalType, dataDir: string): LegalDocument {
  const override = path.join(dataDir, 'legal', `${type}.md`);
  let text: string;
  try {
    text = readFileSync(override, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    text = readFileSync(path.join(SHIPPED_DIR, `${type}.md`), 'utf8');
  }
  const front = FRONT_MATTER.exec(text);
  const declared = front?.[1] ? /^version:\s*(.+?)\s*$/m.exec(front[1])?.[1] : undefined;
  const content = front ? text.slice(front[0].length) : text;
  return { type, version: declared ?? sha256(content).slice(0, 12), content };
}
