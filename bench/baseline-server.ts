import Fastify from 'fastify';

// The reference point: a bare Fastify JSON route, started the way Trackstack is (one Node process, no proxy).
const app = Fastify({ logger: false });
app.get('/json', async () => [{ id: 1, name: 'baseline', uniqueId: '123456789012345', status: 'online' }]);
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
const address = app.server.address();
console.log(`API  http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/api`);
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void app.close().then(() => process.exit(0)));
