export interface StoredTokens {
  accessToken: string;
  refreshToken?: string;
}

/** Where a client keeps its tokens: memory by default; an app passes secure storage. */
export interface TokenStore {
  load(): StoredTokens | undefined | Promise<StoredTokens | undefined>;
  save(tokens: StoredTokens): void | Promise<void>;
  clear(): void | Promise<void>;
}

export class MemoryTokenStore implements TokenStore {
  private tokens: StoredTokens | undefined;

  load(): StoredTokens | undefined {
    return this.tokens;
  }

  save(tokens: StoredTokens): void {
    this.tokens = { ...tokens };
  }

  clear(): void {
    this.tokens = undefined;
  }
}

export interface AccessTokenClaims {
  userId: number;
  email: string;
  /** Epoch seconds. */
  exp: number;
}

/** Reads the claims a client may use (spec §5.9) without verifying the signature: for display only. */
export function readClaims(accessToken: string): AccessTokenClaims | undefined {
  const payload = accessToken.split('.')[1];
  if (!payload) return undefined;
  try {
    const base64 = payload.replace(/-/g, '+').replace(/_/g, '/');
    const bytes = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes)) as Partial<AccessTokenClaims>;
    if (typeof claims.userId !== 'number' || typeof claims.email !== 'string' || typeof claims.exp !== 'number') return undefined;
    return { userId: claims.userId, email: claims.email, exp: claims.exp };
  } catch {
    return undefined;
  }
}
