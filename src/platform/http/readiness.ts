declare module 'fastify' {
  interface FastifyInstance {
    /** Set by main on SIGTERM; every app has its own (createHttpApp). */
    readiness: Readiness;
  }
}

/**
 * Where the process is in its life. Health answers `ready: true` only while serving, so a load
 * balancer sends nothing new to a process that is migrating its database or draining (DESIGN §5.11).
 */
export class Readiness {
  phase: 'migrating' | 'serving' | 'draining' = 'serving';
}
