import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Type } from 'typebox';
import { createHttpApp, MAX_BODY_DEPTH } from '../../../src/platform/http/app.ts';
import type { HttpApp } from '../../../src/platform/http/app.ts';
import { nestedJson } from '../../support/nested-json.ts';
import { ATTRIBUTES_LIMITS, AttributesInput, DecimalInteger, IdParam } from '../../../src/platform/http/schemas.ts';


describe('HTTP platform: shared input schemas', () => {
  let app: HttpApp;
  const received: unknown[] = [];

  before(async () => {
    app = createHttpApp({ logLevel: 'silent', bodyLimit: 1_048_576, trustProxy: undefined });
    app.get(
      '/things/:id',
      {
        schema: {
          params: Type.Object({ id: IdParam }),
          querystring: Type.Object({
            offset: Type.Optional(DecimalInteger({ minimum: 0, maximum: 1000 }, { default: 0 })),
            ids: Type.Optional(Type.Array(IdParam, { maxItems: 3 })),
          }),
        },
      },
      async (request) => ({ id: request.params.id, offset: request.query.offset, ids: request.query.ids ?? null }),
    );
    app.post('/things', { schema: { body: Type.Object({ attributes: AttributesInput() }) } }, async (request) => {
      received.push(request.body);
      return { stored: true };
    });
    app.post('/anything', async (request) => {
      received.push(request.body);
      return { stored: true };
    });
    await app.ready();
  });
  after(() => app.close());

  const postJson = (url: string, payload: string) => app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json' } });

  function assertRefused(response: { statusCode: number; json(): { code: string; details: { path: string }[] } }, path: string): void {
    assert.equal(response.statusCode, 400);
    const body = response.json();
    assert.equal(body.code, 'VALIDATION_FAILED');
    assert.equal(body.details[0]?.path, path);
  }

  describe('whole numbers in paths and queries', () => {
    it('hands canonical decimal integers to the route as numbers, defaults included', async () => {
      const response = await app.inject({ url: '/things/9007199254740991?offset=7&ids=1&ids=20' });
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), { id: Number.MAX_SAFE_INTEGER, offset: 7, ids: [1, 20] });
      assert.deepEqual((await app.inject({ url: '/things/2?ids=3' })).json(), { id: 2, offset: 0, ids: [3] });
    });

    for (const id of ['0x2', '0b10', '0o2', '2e0', '2.0', '+2', '-2', '02', '%202', '2%20', '0', '9007199254740992', '1e309', 'Infinity', 'NaN'])
      it(`refuses the id '${id}' with 400 VALIDATION_FAILED`, async () => {
        assertRefused(await app.inject({ url: `/things/${id}` }), '/params/id');
      });

    for (const offset of ['1e309', '1e3', '-1', '1.5', '0x10', '1001', ' 1'])
      it(`refuses offset=${offset}`, async () => {
        assertRefused(await app.inject({ url: `/things/1?offset=${encodeURIComponent(offset)}` }), '/query/offset');
      });

    it('checks each repeated id', async () => {
      assertRefused(await app.inject({ url: '/things/1?ids=1&ids=0x2' }), '/query/ids/1');
    });
  });

  describe('attributes', () => {
    it(`takes values nested ${ATTRIBUTES_LIMITS.maxDepth} levels and up to ${ATTRIBUTES_LIMITS.maxBytes} bytes`, async () => {
      const deepest = `{"attributes":${nestedJson(ATTRIBUTES_LIMITS.maxDepth)}}`;
      assert.equal((await postJson('/things', deepest)).statusCode, 200);
      const filler = 'x'.repeat(ATTRIBUTES_LIMITS.maxBytes - '{"k":""}'.length);
      assert.equal((await postJson('/things', JSON.stringify({ attributes: { k: filler } }))).statusCode, 200);
    });

    it('refuses one level deeper, naming the path, and never reaches the route', async () => {
      const count = received.length;
      const response = await postJson('/things', `{"attributes":${nestedJson(ATTRIBUTES_LIMITS.maxDepth + 1)}}`);
      assertRefused(response, `/body/attributes${'/a'.repeat(ATTRIBUTES_LIMITS.maxDepth + 1)}`);
      assert.match(response.json().message, /nests deeper than 8 levels/);
      assert.equal(received.length, count);
    });

    it('refuses attributes over the size, through arrays too', async () => {
      const count = received.length;
      const filler = 'x'.repeat(ATTRIBUTES_LIMITS.maxBytes - '{"k":""}'.length + 1);
      assertRefused(await postJson('/things', JSON.stringify({ attributes: { k: filler } })), '/body/attributes');
      assertRefused(await postJson('/things', `{"attributes":{"list":[[[[[[[[[1]]]]]]]]]}}`), '/body/attributes/list/0/0/0/0/0/0/0/0');
      assert.equal(received.length, count);
    });

    it('refuses too many keys and overlong keys', async () => {
      const many = Object.fromEntries(Array.from({ length: ATTRIBUTES_LIMITS.maxKeys + 1 }, (_, index) => [`k${index}`, index]));
      assertRefused(await postJson('/things', JSON.stringify({ attributes: many })), '/body/attributes');
      assertRefused(await postJson('/things', JSON.stringify({ attributes: { ['k'.repeat(ATTRIBUTES_LIMITS.maxKeyLength + 1)]: 1 } })), '/body/attributes');
      assert.equal((await postJson('/things', JSON.stringify({ attributes: { ['k'.repeat(ATTRIBUTES_LIMITS.maxKeyLength)]: 1 } }))).statusCode, 200);
    });
  });

  describe('body depth', () => {
    it(`refuses any JSON body nested deeper than ${MAX_BODY_DEPTH} levels with 400, also on routes without a schema`, async () => {
      const count = received.length;
      assert.equal((await postJson('/anything', nestedJson(MAX_BODY_DEPTH))).statusCode, 200);
      for (const payload of [nestedJson(MAX_BODY_DEPTH + 1), nestedJson(5000), `${'['.repeat(400_000)}${']'.repeat(400_000)}`]) {
        const response = await postJson('/anything', payload);
        assert.equal(response.statusCode, 400);
        assert.equal(response.json().code, 'VALIDATION_FAILED');
        assert.match(response.json().message, /nests deeper than 32 levels/);
      }
      assert.equal(received.length, count + 1);
    });
  });
});
