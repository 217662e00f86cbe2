// Runs the example: bundles src/app.jsx with esbuild, serves the page on
// http://127.0.0.1:5173 and passes the API and sockets through to an Atrium node, so the
// page and the API share one origin.
//
//   npm start                                  starts an atrium-node too (this repository's
//                                              target/debug build, made with cargo if missing)
//   ATRIUM_URL=http://127.0.0.1:8080 npm start uses a node you run yourself
//   PORT=3000 npm start                        another port
//   npm run build                              bundles only (dist/app.js), as a check

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');

const built = await esbuild.build({
  entryPoints: [path.join(HERE, 'src/app.jsx')],
  bundle: true,
  format: 'esm',
  jsx: 'automatic',
  minify: true,
  write: false,
  // The packages are linked from clients/ (which may have its own node_modules): resolve
  // React and the client from here, so the page has one of each.
  plugins: [{
    name: 'one-copy',
    setup(build) {
      build.onResolve({ filter: /^(react|react-dom|@atrium\/client)(\/.*)?$/ }, (args) => {
        if (args.pluginData === 'here') return undefined;
        return build.resolve(args.path, { kind: args.kind, resolveDir: HERE, pluginData: 'here' });
      });
    },
  }],
  define: { 'process.env.NODE_ENV': '"production"' },
});
const bundle = built.outputFiles[0].text;
if (process.argv.includes('--build-only')) {
  fs.mkdirSync(path.join(HERE, 'dist'), { recursive: true });
  fs.writeFileSync(path.join(HERE, 'dist/app.js'), bundle);
  console.log(`dist/app.js: ${bundle.length} bytes`);
  process.exit(0);
}

let target = process.env.ATRIUM_URL ? new URL(process.env.ATRIUM_URL) : null;
if (!target) target = await startNode();

const page = fs.readFileSync(path.join(HERE, 'index.html'));
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && (req.url === '/' || req.url.startsWith('/?'))) return res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page);
  if (req.method === 'GET' && req.url === '/app.js') return res.writeHead(200, { 'Content-Type': 'text/javascript; charset=utf-8' }).end(bundle);
  const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } }, (r) => {
    res.writeHead(r.statusCode, r.headers);
    r.pipe(res);
  });
  up.on('error', () => res.writeHead(502).end('{"error":{"code":"unavailable","message":"the Atrium node cannot be reached"}}'));
  req.pipe(up);
});
// Socket upgrades: a TCP pipe to the node, replaying the request head.
server.on('upgrade', (req, sock, head) => {
  const up = net.connect(Number(target.port), target.hostname, () => {
    let raw = `${req.method} ${req.url} HTTP/1.1\r\n`;
    for (let i = 0; i < req.rawHeaders.length; i += 2) raw += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\r\n`;
    up.write(`${raw}\r\n`);
    if (head.length) up.write(head);
    sock.pipe(up).pipe(sock);
  });
  const kill = () => { sock.destroy(); up.destroy(); };
  up.on('error', kill);
  sock.on('error', kill);
});
const port = Number(process.env.PORT ?? 5173);
server.listen(port, "127.0.0.1", () => console.log(`Atrium canvas on http://127.0.0.1:${server.address().port}/ (node: ${target.origin})`));

/** Starts this repository's atrium-node with its data in .atrium-data/ (or ATRIUM_DATA). */
async function startNode() {
  const bin = process.env.ATRIUM_NODE_BIN ?? path.join(ROOT, 'target/debug/atrium-node');
  if (!fs.existsSync(bin)) {
    console.log('building atrium-node (cargo build -p atrium-node)…');
    const r = spawnSync('cargo', ['build', '-q', '-p', 'atrium-node'], { cwd: ROOT, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('cargo build failed: install Rust (https://rustup.rs) or set ATRIUM_URL');
  }
  const p = spawn(bin, ['--bind', '127.0.0.1:0', '--data', process.env.ATRIUM_DATA ?? path.join(HERE, '.atrium-data')], { stdio: ['ignore', 'pipe', 'inherit'] });
  // The node goes with us: on Ctrl-C, on a kill, on a normal exit.
  process.on('exit', () => p.kill());
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => process.exit(0));
  return new Promise((resolve, reject) => {
    let buf = '';
    p.stdout.on('data', (d) => {
      buf += d;
      const m = /listening on (http:\/\/[0-9.]+:\d+)/.exec(buf);
      if (m) resolve(new URL(m[1]));
    });
    p.on('exit', (code) => reject(new Error(`atrium-node exited with ${code}`)));
  });
}
