import { readFileSync } from 'node:fs';

/** Raised for the first bad variable; main prints its message as one line and exits. */
export class ConfigError extends Error {
  readonly variable: string;
  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.variable = variable;
  }
}

export type Env = Record<string, string | undefined>;

/** Hosts of this machine, the only ones a provider URL may reach over plain http. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/**
 * Reads environment variables, each validated as it is read: the first bad value throws a
 * ConfigError naming it, which main prints as one line (`Configuration error: VAR: problem`).
 * config.ts reads the process-wide variables with it and each module's settings.ts its own.
 */
export class EnvReader {
  private readonly env: Env;
  constructor(env: Env) {
    this.env = env;
  }

  optional(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  string(name: string, fallback: string): string {
    return this.optional(name) ?? fallback;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw)) throw new ConfigError(name, `expected a whole number, got '${raw}'`);
    const value = Number(raw);
    if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
    return value;
  }

  optionalInt(name: string): number | undefined {
    return this.optional(name) === undefined ? undefined : this.int(name, 0, 0, Number.MAX_SAFE_INTEGER);
  }

  bool(name: string, fallback: boolean): boolean {
    const raw = this.optional(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['true', '1', 'yes', 'on'].includes(raw)) return true;
    if (['false', '0', 'no', 'off'].includes(raw)) return false;
    throw new ConfigError(name, `expected true or false, got '${raw}'`);
  }

  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const match = allowed.find((value) => value.toLowerCase() === raw.toLowerCase());
    if (!match) throw new ConfigError(name, `expected one of ${allowed.join(', ')}, got '${raw}'`);
    return match;
  }

  matching(name: string, fallback: string, pattern: RegExp, expected: string): string {
    const value = this.string(name, fallback);
    if (!pattern.test(value)) throw new ConfigError(name, `expected ${expected}, got '${value}'`);
    return value;
  }

  /** `name=value` pairs separated by commas; a value is a number >= 0, true or false. */
  settings(name: string): Record<string, number | boolean> {
    const settings: Record<string, number | boolean> = {};
    for (const pair of this.list(name, [])) {
      const match = /^([A-Za-z][A-Za-z0-9]*)\s*=\s*(\S+)$/.exec(pair);
      if (!match) throw new ConfigError(name, `expected name=value pairs separated by commas, got '${pair}'`);
      const [, key, raw] = match as unknown as [string, string, string];
      if (raw === 'true' || raw === 'false') settings[key] = raw === 'true';
      else if (/^\d+(\.\d+)?$/.test(raw)) settings[key] = Number(raw);
      else throw new ConfigError(name, `${key}: expected a number >= 0, true or false, got '${raw}'`);
    }
    return settings;
  }

  list(name: string, fallback: string[]): string[] {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    return raw.split(',').map((item) => item.trim()).filter(Boolean);
  }

  optionalUrl(name: string, protocols: string[]): string | undefined {
    const raw = this.optional(name);
    if (raw === undefined) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw new ConfigError(name, `not a valid URL: '${raw}'`);
    }
    if (!protocols.includes(parsed.protocol)) {
      throw new ConfigError(name, `expected a ${protocols.join(' or ')} URL, got '${parsed.protocol}'`);
    }
    return raw;
  }

  url(name: string, fallback: string, protocols: string[]): string {
    return this.optionalUrl(name, protocols) ?? fallback;
  }

  /** A provider's URL (social login, store certificates): https, or http only on this machine (a local stand-in in tests or development). */
  providerUrl(name: string, fallback: string): string {
    const value = this.url(name, fallback, ['http:', 'https:']);
    const url = new URL(value);
    if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
      throw new ConfigError(name, `must be an https URL (http only for localhost), got '${value}'`);
    }
    return value;
  }

  secret(name: string, minLength: number): string | undefined {
    const value = this.optional(name);
    if (value !== undefined && value.length < minLength) {
      throw new ConfigError(name, `must be at least ${minLength} characters`);
    }
    return value;
  }

  /** A provider's origin to which the product appends the API's paths: no path, query or fragment. */
  providerOrigin(name: string, fallback: string): string {
    const url = new URL(this.providerUrl(name, fallback));
    if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
      throw new ConfigError(name, `expected an origin such as https://host:port, without a path, got '${url.href}'`);
    }
    return url.origin;
  }

  /** A base64url value (no padding) of exactly `bytes` bytes once decoded. */
  base64url(name: string, bytes: number): string | undefined {
    const value = this.optional(name);
    if (value !== undefined && (!/^[A-Za-z0-9_-]+$/.test(value) || Buffer.from(value, 'base64url').length !== bytes)) {
      throw new ConfigError(name, `expected ${bytes} bytes in base64url (as web-push generate-vapid-keys prints them)`);
    }
    return value;
  }

  /** Text given inline when it starts with `{`, else the path of a file holding it. */
  jsonText(name: string): string | undefined {
    const raw = this.optional(name);
    if (raw === undefined) return undefined;
    return raw.startsWith('{') ? raw : this.readFile(name, raw).toString('utf8');
  }

  /** A PEM given inline or as the path of a file holding it. */
  pem(name: string): string | undefined {
    const raw = this.optional(name);
    if (raw === undefined) return undefined;
    const text = raw.includes('-----BEGIN') ? raw.replace(/\\n/g, '\n') : this.readFile(name, raw).toString('utf8');
    if (!text.includes('-----BEGIN')) throw new ConfigError(name, 'not a PEM (no -----BEGIN line)');
    return text;
  }

  files(name: string): Buffer[] {
    return this.list(name, []).map((file) => this.readFile(name, file));
  }

  private readFile(name: string, file: string): Buffer {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new ConfigError(name, `cannot read file '${file}' (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
}
