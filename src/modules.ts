import { SERVICE_NAMES } from './config.ts';
import type { ServiceName } from './config.ts';
import type { Topic } from './platform/bus.ts';
import type { ModuleMigrations } from './platform/db/migrations.ts';
import type { RouteAccessTable } from './platform/http/access.ts';
import type { AnyModuleDescriptor } from './platform/module.ts';
import { gatewayModule } from './gateway/module.ts';
import type { FactConsumers } from './platform/outbox/outbox.ts';
import { authModule } from './services/auth/module.ts';
import { billingModule } from './services/billing/module.ts';
import { devicesModule } from './services/devices/module.ts';
import { notificationsModule } from './services/notifications/module.ts';
import { trackingModule } from './services/tracking/module.ts';

/**
 * Every module's descriptor: what main needs to know of a module before (or instead of) creating
 * it. The tables below, and the order in which a process creates its modules, follow from them.
 */
export const MODULES: readonly AnyModuleDescriptor[] = [authModule, devicesModule, trackingModule, billingModule, notificationsModule];

/** The gateway's descriptor: the module that fronts the others, run when `SERVICES` names it. */
export const GATEWAY = gatewayModule;

function descriptorOf(name: ServiceName): AnyModuleDescriptor {
  const descriptors = MODULES.filter((descriptor) => descriptor.name === name);
  if (descriptors.length !== 1) throw new Error(`${descriptors.length} module descriptors are named ${name}`);
  return descriptors[0] as AnyModuleDescriptor;
}

function byName<T>(value: (descriptor: AnyModuleDescriptor) => T): Record<ServiceName, T> {
  return Object.fromEntries(SERVICE_NAMES.map((name) => [name, value(descriptorOf(name))])) as Record<ServiceName, T>;
}

/** Every module's migrations. */
export const MODULE_MIGRATIONS: Record<ServiceName, ModuleMigrations> = byName((descriptor) => descriptor.migrations);

/** Every module's routes and who may call each: a gateway-only process routes and authenticates from these. */
export const MODULE_ROUTE_ACCESS: Record<ServiceName, RouteAccessTable> = byName((descriptor) => descriptor.routeAccess);

/** Which modules act on each fact, known to every process whatever it runs: a fact is recorded once per consumer. */
export const FACT_CONSUMERS: FactConsumers = (() => {
  const consumers: Partial<Record<Topic, string[]>> = {};
  for (const descriptor of MODULES) for (const topic of Object.keys(descriptor.consumes) as Topic[]) (consumers[topic] ??= []).push(descriptor.name);
  return consumers;
})();

/**
 * The descriptors of `names` in the order a process creates them: a module after those of them
 * that provide what it needs. A need no module of `names` provides is met remotely, or not at all.
 */
export function wiringOrder(names: readonly ServiceName[]): AnyModuleDescriptor[] {
  const pending = names.map(descriptorOf);
  const ordered: AnyModuleDescriptor[] = [];
  while (pending.length > 0) {
    const awaited = new Set(pending.map((descriptor) => descriptor.provides));
    const ready = pending.find((descriptor) => !descriptor.needs.some((need: string) => awaited.has(need)));
    if (!ready) throw new Error(`the needs of modules ${pending.map((descriptor) => descriptor.name).join(', ')} form a cycle`);
    ordered.push(ready);
    pending.splice(pending.indexOf(ready), 1);
  }
  return ordered;
}
