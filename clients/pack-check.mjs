// npm pack of both packages, then what a person installing them gets:
// - each tarball holds its sources, its emitted types, README and CHANGELOG, and nothing
//   else (no tests, no node_modules, no config);
// - every `exports` target and the `types` entry is in the tarball;
// - @atrium/client has no runtime dependencies; @atrium/react has React and the client as
//   peers;
// - a fresh consumer project (clients/consumer, installed with npm ci) installs the two
//   tarballs, type-checks code written as docs/client.md says with `tsc` (lib checks on),
//   and imports both packages in Node.
//
//   node clients/pack-check.mjs     (after npm ci in clients/js and clients/react)

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'atrium-pack-'));
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

function pack(dir) {
  const json = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', out, '--loglevel=error'], path.join(HERE, dir)).replace(/^[^[]*/, ''));
  const [info] = json;
  const files = info.files.map((f) => f.path).sort();
  const pkg = JSON.parse(fs.readFileSync(path.join(HERE, dir, 'package.json'), 'utf8'));
  console.log(`packed ${info.name}@${info.version}: ${files.length} files, ${info.size} bytes -> ${info.filename}`);
  assert.equal(info.version, pkg.version);
  assert.match(pkg.version, /^\d+\.\d+\.\d+$/, 'a semver version');
  for (const f of files) {
    assert.ok(/^(src\/.+\.js|types\/.+\.d\.ts|README\.md|CHANGELOG\.md|package\.json|LICENSE)$/.test(f), `${info.name}: unexpected file in the tarball: ${f}`);
  }
  for (const need of ['package.json', 'README.md', 'CHANGELOG.md', 'src/index.js', 'types/index.d.ts']) {
    assert.ok(files.includes(need), `${info.name}: ${need} is missing from the tarball`);
  }
  // Every source module has its declarations.
  for (const f of files.filter((x) => x.startsWith('src/'))) {
    const d = f.replace(/^src\//, 'types/').replace(/\.js$/, '.d.ts');
    assert.ok(files.includes(d), `${info.name}: ${d} (the types of ${f}) is missing`);
  }
  const targets = [pkg.main, pkg.types];
  for (const [, entry] of Object.entries(pkg.exports)) {
    if (typeof entry === 'string') targets.push(entry);
    else targets.push(...Object.values(entry));
  }
  for (const t of targets) assert.ok(files.includes(t.replace(/^\.\//, '')), `${info.name}: ${t} (exports/types) is not in the tarball`);
  assert.equal(pkg.exports['.'].types, pkg.types, 'exports["."].types is the types entry');
  assert.equal(pkg.type, 'module');
  assert.equal(pkg.sideEffects, false, 'tree-shakable');
  const changelog = fs.readFileSync(path.join(HERE, dir, 'CHANGELOG.md'), 'utf8');
  assert.ok(changelog.includes(`## ${pkg.version} `), `${info.name}: CHANGELOG.md has an entry for ${pkg.version}`);
  return { tgz: path.join(out, info.filename), pkg };
}

const js = pack('js');
assert.deepEqual(js.pkg.dependencies ?? {}, {}, '@atrium/client has no runtime dependencies');
const react = pack('react');
assert.deepEqual(react.pkg.dependencies ?? {}, {}, '@atrium/react has no runtime dependencies');
assert.ok(react.pkg.peerDependencies.react && react.pkg.peerDependencies['@atrium/client'], 'React and the client are peers');

// The consumer: a copy of clients/consumer, installed from its lock file, then the tarballs.
const consumer = path.join(out, 'consumer');
fs.mkdirSync(consumer);
for (const f of ['package.json', 'package-lock.json', 'tsconfig.json', 'app.tsx']) fs.copyFileSync(path.join(HERE, 'consumer', f), path.join(consumer, f));
run('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], consumer);
run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--loglevel=error', js.tgz, react.tgz], consumer);
for (const name of ['@atrium/client', '@atrium/react']) {
  assert.ok(!fs.lstatSync(path.join(consumer, 'node_modules', name)).isSymbolicLink(), `${name} is installed from its tarball`);
}
run(path.join(consumer, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json'], consumer);
console.log('the consumer project type-checks against the packed packages');
const smoke = run('node', ['--input-type=module', '-e', `
  const c = await import('@atrium/client');
  const r = await import('@atrium/react');
  const names = ['createClient', 'Room', 'Api', 'ApiError', 'MemoryStorage', 'CloseCode'].filter((n) => !(n in c));
  const hooks = ['RoomProvider', 'ClientProvider', 'useDoc', 'useNode', 'usePeople', 'useOthersCursors', 'useMyPresence', 'useStatus', 'usePatch'].filter((n) => typeof r[n] !== 'function');
  if (names.length || hooks.length) { console.log('missing', names, hooks); process.exit(1); }
  console.log('ok');
`], consumer);
assert.equal(smoke.trim(), 'ok', 'both packages import in Node');
fs.rmSync(out, { recursive: true, force: true });
console.log('pack check: ok');
