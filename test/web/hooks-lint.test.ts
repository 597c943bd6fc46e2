import assert from 'node:assert/strict';
import path from 'node:path';
import { it } from 'node:test';
import { ESLint } from 'eslint';

/** The hook rules `npm run check` reports in a screen of the web app, as `rule@line`. */
async function hookProblems(source: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: process.cwd() });
  const [result] = await eslint.lintText(source, { filePath: path.resolve('web/src/screens/Example.tsx') });
  return (result?.messages ?? []).filter((message) => message.ruleId?.startsWith('react-hooks/')).map((message) => `${message.ruleId}@${message.line}`);
}

it('flags an effect that reads a value missing from its dependencies, and a hook called conditionally', async () => {
  const source = [
    "import { useEffect, useState } from 'react';",
    'export function Example({ id, open }: { id: number; open: boolean }) {',
    '  const [name, setName] = useState(String(id));',
    '  useEffect(() => setName(String(id)), []);',
    '  if (open) useEffect(() => undefined, []);',
    '  return name;',
    '}',
  ].join('\n');
  assert.deepEqual(await hookProblems(source), ['react-hooks/exhaustive-deps@4', 'react-hooks/rules-of-hooks@5']);
});

it('lets through an effect that lists what it reads', async () => {
  const source = [
    "import { useEffect, useState } from 'react';",
    'export function Example({ id }: { id: number }) {',
    '  const [name, setName] = useState(String(id));',
    '  useEffect(() => setName(String(id)), [id]);',
    '  return name;',
    '}',
  ].join('\n');
  assert.deepEqual(await hookProblems(source), []);
});
