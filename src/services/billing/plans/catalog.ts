import { readFileSync } from 'node:fs';
import { ConfigError } from '../../../config.ts';
import type { BillingProvider } from '../providers/index.ts';

/** What a plan counts (DESIGN §5.8); `historyDays` bounds the history served rather than a number of things held. */
export const PLAN_LIMITS = ['devices', 'geofences', 'shares', 'notificationRules', 'historyDays'] as const;
export type PlanLimit = (typeof PLAN_LIMITS)[number];

/** The limits on things a user holds, as `usage` reports them. */
export const COUNTED_LIMITS = ['devices', 'geofences', 'shares', 'notificationRules'] as const;
export type CountedLimit = (typeof COUNTED_LIMITS)[number];

/** The notification channels of DESIGN §5.6, the names a plan may list under `features.channels`. */
export const PLAN_CHANNELS = ['web', 'mail', 'webpush', 'fcm', 'apns', 'webhook'] as const;

/** Null: no limit. */
export type PlanLimits = Record<PlanLimit, number | null>;

export interface PlanFeatures {
  commands: boolean;
  /** The report routes (/api/reports/...) and their downloads. */
  reports: boolean;
  /** Reports mailed or posted on a schedule. */
  scheduledReports: boolean;
  /** The notification channels allowed; null: every channel. */
  channels: readonly string[] | null;
}

/** A plan as other modules and the API see it. */
export interface PlanView {
  id: string;
  name: string;
  limits: PlanLimits;
  features: PlanFeatures;
}

export interface Plan extends PlanView {
  /** Position in the file: a higher rank wins when several subscriptions entitle. */
  rank: number;
}

const PROVIDERS: readonly BillingProvider[] = ['stripe', 'apple', 'google'];
const PLAN_KEYS = new Set(['id', 'name', 'default', 'products', 'limits', 'features']);
/** The on/off features; a missing flag allows. */
const SWITCHED_FEATURES = ['commands', 'reports', 'scheduledReports'] as const;
const FEATURE_KEYS = new Set<string>([...SWITCHED_FEATURES, 'channels']);
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** Product ids as the billing tables store them (255 printable ASCII characters). */
const PRODUCT_PATTERN = /^[\x21-\x7E]{1,255}$/;
const MAX_LIMIT = 1_000_000_000;
const MAX_NAME_LENGTH = 100;

/** The plans of one deployment, lowest rank first, and which plan each provider's product grants. */
export class PlanCatalog {
  readonly plans: readonly Plan[];
  readonly defaultPlan: Plan;
  readonly #byId: ReadonlyMap<string, Plan>;
  readonly #byProduct: ReadonlyMap<string, Plan>;

  constructor(plans: readonly Plan[], defaultPlan: Plan, products: ReadonlyMap<string, Plan>) {
    this.plans = plans;
    this.defaultPlan = defaultPlan;
    this.#byId = new Map(plans.map((plan) => [plan.id, plan]));
    this.#byProduct = products;
  }

  /** Without PLANS_FILE: one default plan that limits nothing, so a self-hosted install is unaffected. */
  static unlimited(): PlanCatalog {
    const plan: Plan = { id: 'default', name: 'Unlimited', rank: 0, limits: unlimitedLimits(), features: allFeatures() };
    return new PlanCatalog([plan], plan, new Map());
  }

  find(planId: string): Plan | undefined {
    return this.#byId.get(planId);
  }

  /** The plan a provider's product (Stripe price or plan id, App Store or Google Play productId) grants, if any. */
  forProduct(provider: BillingProvider, productId: string): Plan | undefined {
    return this.#byProduct.get(productKey(provider, productId));
  }
}

export function unlimitedLimits(): PlanLimits {
  return { devices: null, geofences: null, shares: null, notificationRules: null, historyDays: null };
}

/** PLANS_FILE read and checked; a bad file stops the start with one line naming the problem. */
export function loadPlanCatalog(file: string | undefined): PlanCatalog {
  if (file === undefined) return PlanCatalog.unlimited();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError('PLANS_FILE', `cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError('PLANS_FILE', `${file} is not valid JSON: ${oneLine((error as Error).message)}`);
  }
  try {
    return parsePlans(json);
  } catch (error) {
    if (error instanceof PlanFileError) throw new ConfigError('PLANS_FILE', `${file}: ${error.message}`);
    throw error;
  }
}

/** A problem in the plans, said in one line. */
export class PlanFileError extends Error {}

/** Checks the plans (DESIGN §5.8): an array ordered lowest to highest rank with exactly one default. */
export function parsePlans(json: unknown): PlanCatalog {
  if (!Array.isArray(json) || json.length === 0) throw new PlanFileError('expected a non-empty JSON array of plans');
  const plans: Plan[] = [];
  const defaults: Plan[] = [];
  const products = new Map<string, Plan>();
  json.forEach((entry: unknown, index) => {
    const where = `plan ${index + 1}`;
    if (!isRecord(entry)) throw new PlanFileError(`${where} is not an object`);
    const unknown = Object.keys(entry).find((key) => !PLAN_KEYS.has(key));
    if (unknown !== undefined) throw new PlanFileError(`${where} has an unknown field "${oneLine(unknown)}"`);
    const { id, name } = entry;
    if (typeof id !== 'string' || !ID_PATTERN.test(id)) throw new PlanFileError(`${where}: "id" must be 1 to 64 letters, digits, '_', '.' or '-'`);
    const named = `plan "${id}"`;
    if (plans.some((plan) => plan.id === id)) throw new PlanFileError(`${named} is defined twice`);
    if (typeof name !== 'string' || name.trim() === '' || name.length > MAX_NAME_LENGTH) {
      throw new PlanFileError(`${named}: "name" must be a non-empty string of at most ${MAX_NAME_LENGTH} characters`);
    }
    if (entry.default !== undefined && typeof entry.default !== 'boolean') throw new PlanFileError(`${named}: "default" must be true or false`);
    const plan: Plan = { id, name, rank: index, limits: limitsOf(entry.limits, named), features: featuresOf(entry.features, named) };
    for (const [provider, productId] of productsOf(entry.products, named)) {
      const key = productKey(provider, productId);
      const other = products.get(key);
      if (other && other !== plan) throw new PlanFileError(`${provider} product "${productId}" is listed by plan "${other.id}" and ${named}`);
      products.set(key, plan);
    }
    plans.push(plan);
    if (entry.default === true) defaults.push(plan);
  });
  if (defaults.length !== 1) {
    throw new PlanFileError(`exactly one plan must have "default": true, found ${defaults.length === 0 ? 'none' : defaults.map((plan) => `"${plan.id}"`).join(', ')}`);
  }
  return new PlanCatalog(plans, defaults[0] as Plan, products);
}

function limitsOf(value: unknown, named: string): PlanLimits {
  const limits = unlimitedLimits();
  if (value === undefined) return limits;
  if (!isRecord(value)) throw new PlanFileError(`${named}: "limits" must be an object`);
  for (const [key, limit] of Object.entries(value)) {
    if (!(PLAN_LIMITS as readonly string[]).includes(key)) {
      throw new PlanFileError(`${named}: unknown limit "${oneLine(key)}" (known: ${PLAN_LIMITS.join(', ')})`);
    }
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0 || limit > MAX_LIMIT) {
      throw new PlanFileError(`${named}: limit "${key}" must be a whole number from 0 to ${MAX_LIMIT} (leave it out for no limit)`);
    }
    limits[key as PlanLimit] = limit;
  }
  return limits;
}

function allFeatures(): PlanFeatures {
  return { commands: true, reports: true, scheduledReports: true, channels: null };
}

function featuresOf(value: unknown, named: string): PlanFeatures {
  if (value === undefined) return allFeatures();
  if (!isRecord(value)) throw new PlanFileError(`${named}: "features" must be an object`);
  const unknown = Object.keys(value).find((key) => !FEATURE_KEYS.has(key));
  if (unknown !== undefined) throw new PlanFileError(`${named}: unknown feature "${oneLine(unknown)}" (known: ${[...FEATURE_KEYS].join(', ')})`);
  const features = allFeatures();
  for (const name of SWITCHED_FEATURES) {
    const flag = value[name];
    if (flag === undefined) continue;
    if (typeof flag !== 'boolean') throw new PlanFileError(`${named}: feature "${name}" must be true or false`);
    features[name] = flag;
  }
  const { channels } = value;
  if (channels !== undefined) {
    if (!Array.isArray(channels)) throw new PlanFileError(`${named}: feature "channels" must be an array of channel names`);
    const bad = channels.find((channel: unknown) => typeof channel !== 'string' || !(PLAN_CHANNELS as readonly string[]).includes(channel));
    if (bad !== undefined) {
      throw new PlanFileError(`${named}: unknown channel ${oneLine(JSON.stringify(bad) ?? String(bad))} (known: ${PLAN_CHANNELS.join(', ')})`);
    }
  }
  features.channels = channels === undefined ? null : [...new Set(channels as string[])];
  return features;
}

function productsOf(value: unknown, named: string): [BillingProvider, string][] {
  if (value === undefined) return [];
  if (!isRecord(value)) throw new PlanFileError(`${named}: "products" must be an object of stripe, apple and google product ids`);
  const pairs: [BillingProvider, string][] = [];
  for (const [provider, ids] of Object.entries(value)) {
    if (!(PROVIDERS as readonly string[]).includes(provider)) {
      throw new PlanFileError(`${named}: unknown provider "${oneLine(provider)}" under "products" (known: ${PROVIDERS.join(', ')})`);
    }
    if (!Array.isArray(ids) || ids.some((id: unknown) => typeof id !== 'string' || !PRODUCT_PATTERN.test(id))) {
      throw new PlanFileError(`${named}: "products.${provider}" must be an array of product ids (printable ASCII, at most 255 characters)`);
    }
    for (const id of ids as string[]) pairs.push([provider as BillingProvider, id]);
  }
  return pairs;
}

function productKey(provider: BillingProvider, productId: string): string {
  return `${provider}\u0000${productId}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Keeps a message from the file to one short line. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').slice(0, 80);
}
