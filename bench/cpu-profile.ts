/**
 * `node bench/cpu-profile.ts <file.cpuprofile> [--stretch-ms 5] [--top 25] [--last-ms N] [--each N]`: what held a process's
 * event loop, from a profile written by `node --cpu-prof`. A stretch is a run of samples with no
 * idle one between them (one turn of the loop, or several back to back); the report lists the
 * stretches longer than `--stretch-ms` and the functions with the most self time inside them,
 * which are what other requests waited for, and the project's own functions (under src/) by the
 * time they were on the stack there (self time included). `--last-ms` keeps the profile's last N ms
 * only: the fan-out bench stops its server right after the drain it measures. `--each N` lists every
 * such stretch with its own top N functions.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { 'stretch-ms': { type: 'string', default: '5' }, top: { type: 'string', default: '25' }, 'last-ms': { type: 'string' }, each: { type: 'string' } } });
const stretchMs = Number(values['stretch-ms']);
const top = Number(values.top);
const lastMs = values['last-ms'] === undefined ? Infinity : Number(values['last-ms']);

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const label = (id: number) => {
    const { functionName, url, lineNumber } = (nodes.get(id) as ProfileNode).callFrame;
    const where = url ? `${url.replace(/^file:\/\//, '').replace(process.cwd() + '/', '')}:${lineNumber + 1}` : '';
    return `${functionName || '(anonymous)'} ${where}`.trim();
  };
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  /** The project's functions on the stack of a sample, each once. */
  const ours = (id: number) => {
    const names = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
      if ((nodes.get(at) as ProfileNode).callFrame.url.includes('/src/')) names.add(label(at));
    }
    return names;
  };
  const idle = new Set(profile.nodes.filter((node) => node.callFrame.functionName === '(idle)').map((node) => node.id));

  // Each sample's duration is the delta to the next one (µs).
  const stretches: { startUs: number; us: number; self: Map<string, number>; inclusive: Map<string, number> }[] = [];
  let current: (typeof stretches)[number] | undefined;
  let clock = 0;
  for (let index = 0; index < profile.samples.length; index++) {
    clock += profile.timeDeltas[index] ?? 0;
    const id = profile.samples[index] as number;
    const us = profile.timeDeltas[index + 1] ?? 0;
    if (idle.has(id)) {
      current = undefined;
      continue;
    }
    if (!current) stretches.push((current = { startUs: clock, us: 0, self: new Map(), inclusive: new Map() }));
    current.us += us;
    const name = label(id);
    current.self.set(name, (current.self.get(name) ?? 0) + us);
    for (const own of ours(id)) current.inclusive.set(own, (current.inclusive.get(own) ?? 0) + us);
  }
  const long = stretches.filter((stretch) => stretch.us >= stretchMs * 1000 && stretch.startUs >= clock - lastMs * 1000);
  const sum = (field: 'self' | 'inclusive') => {
    const total = new Map<string, number>();
    for (const stretch of long) for (const [name, us] of stretch[field]) total.set(name, (total.get(name) ?? 0) + us);
    return [...total].sort((a, b) => b[1] - a[1]).slice(0, top);
  };
  const longUs = long.reduce((total, stretch) => total + stretch.us, 0);
  const print = (rows: [string, number][]) => {
    for (const [name, us] of rows) console.log(`  ${(us / 1000).toFixed(1).padStart(8)} ms ${((100 * us) / longUs).toFixed(1).padStart(5)} %  ${name}`);
  };
  console.log(`${file}: ${stretches.length} busy stretches, ${long.length} of ${stretchMs} ms or more (${(longUs / 1000).toFixed(1)} ms in all)`);
  console.log(`  longest: ${long.map((stretch) => (stretch.us / 1000).toFixed(1)).sort((a, b) => Number(b) - Number(a)).slice(0, 15).join(', ')} ms`);
  if (values.each !== undefined) {
    const each = Number(values.each);
    for (const stretch of long) {
      const heads = (field: 'self' | 'inclusive') => [...stretch[field]].sort((a, b) => b[1] - a[1]).slice(0, each).map(([name, us]) => `${(us / 1000).toFixed(1)} ${name}`);
      console.log(`  at ${((stretch.startUs - clock) / 1000).toFixed(0)} ms: ${(stretch.us / 1000).toFixed(1)} ms`);
      for (const line of [...heads('self'), ...heads('inclusive')]) console.log(`      ${line}`);
    }
  }
  console.log('  self time inside them:');
  print(sum('self'));
  console.log('  time on the stack inside them, functions under src/:');
  print(sum('inclusive'));
}
