import assert from 'node:assert/strict';
import path from 'node:path';
import { it } from 'node:test';
import { ESLint } from 'eslint';

const RULE_MESSAGE = 'Words on screen come from t in web/src/i18n.ts.';

/** The lines `npm run check` flags in a screen of the web app, for words written outside web/src/i18n.ts. */
async function wordsOutsideStrings(source: string): Promise<number[]> {
  const eslint = new ESLint({ cwd: process.cwd() });
  const [result] = await eslint.lintText(source, { filePath: path.resolve('web/src/screens/Example.tsx') });
  return (result?.messages ?? []).filter((message) => message.message === RULE_MESSAGE).map((message) => message.line);
}

it('flags every word a screen writes itself, in text, in expressions and in the attributes a person reads or hears', async () => {
  const source = [
    "import { t } from '../i18n.ts';",
    'export function Example({ id, count }: { id: number; count: number }) {',
    '  return (',
    '    <section aria-label="Devices">',
    '      <h1>Devices</h1>',
    "      <p>{'No devices yet'}</p>",
    '      <p>{`${count} devices`}</p>',
    '      <input placeholder="Search" title="Search devices" />',
    '      <img src="/van.svg" alt="A van" />',
    '      <>Ünïcode wörds</>',
    '    </section>',
    '  );',
    '}',
  ].join('\n');
  assert.deepEqual(await wordsOutsideStrings(source), [4, 5, 6, 7, 8, 8, 9, 10]);
});

it('lets through words from t, numbers, punctuation, and attributes no one reads', async () => {
  const source = [
    "import { t } from '../i18n.ts';",
    'export function Example({ id, count }: { id: number; count: number }) {',
    '  return (',
    '    <section aria-label={t.map.devices} className="panel wide" id={`devices-${id}`}>',
    '      <h1>{t.map.devices}</h1>',
    '      <p>{count} · {t.map.search} – 42%</p>',
    '      <a href={`/devices/${id}/history`} data-state="ready">{t.device.history}</a>',
    '      <img src="/van.svg" alt="" />',
    '    </section>',
    '  );',
    '}',
  ].join('\n');
  assert.deepEqual(await wordsOutsideStrings(source), []);
});
