// A tiny static server for web/ that proxies the API and sockets to an atrium-node, so
// the page and the API share one origin (the node sends no CORS headers). Used by the
// end-to-end test until the node serves web/ itself (node/src/http/assets.rs).
//
//   node e2e/server.mjs --node 127.0.0.1:8080 --port 8081
//   import { startServer } from './server.mjs'
//
// It serves `/` as index.html and `/assets/<path>` from web/, `/assets/client/<path>` from
// the client package (clients/js/src, which the page imports as @atrium/client); a
// `/assets/<hash>/<path>` form is accepted too, as the node serves it. Everything else goes
// to the node.

import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLIENT = path.resolve(WEB, '../clients/js/src');
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

/**
 * @param {{node: () => string, port?: number, pageFromNode?: boolean}} o node(url) returns
 *   "host:port" of the node for a request now (it may change when the node restarts); pageFromNode:
 *   proxy the page and its assets too (the node serves them, node/src/http/assets.rs).
 */
export function startServer({ node, port = 0, pageFromNode = false }) {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    if (!pageFromNode && req.method === 'GET' && (url.pathname === '/' || url.pathname.startsWith('/assets/'))) {
      let rel = url.pathname === '/' ? 'index.html' : url.pathname.slice('/assets/'.length);
      rel = rel.replace(/^[0-9a-f]{16}\//, '');
      const [dir, sub] = rel.startsWith('client/') ? [CLIENT, rel.slice('client/'.length)] : [WEB, rel];
      const file = path.resolve(dir, sub);
      if (!file.startsWith(dir + path.sep) || rel.includes('node_modules') || rel.startsWith('e2e') || rel.startsWith('test')) {
        res.writeHead(404).end();
        return;
      }
      try {
        const body = await fs.readFile(file);
        res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'Cache-Control': 'no-cache' });
        res.end(body);
      } catch {
        res.writeHead(404).end();
      }
      return;
    }
    const [host, p] = node(req.url).split(':');
    const up = http.request({ host, port: Number(p), method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'application/json' });
      res.end('{"error":{"code":"unavailable","message":"the node cannot be reached"}}');
    });
    req.pipe(up);
  });
  // WebSocket upgrades: a raw TCP pipe to the node, replaying the request head.
  server.on('upgrade', (req, sock, head) => {
    const [host, p] = node(req.url).split(':');
    const up = net.connect(Number(p), host, () => {
      let raw = `${req.method} ${req.url} HTTP/1.1\r\n`;
      for (let i = 0; i < req.rawHeaders.length; i += 2) raw += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\r\n`;
      up.write(raw + '\r\n');
      if (head.length) up.write(head);
      sock.pipe(up).pipe(sock);
    });
    const kill = () => { sock.destroy(); up.destroy(); };
    up.on('error', kill);
    sock.on('error', kill);
    up.on('close', kill);
    sock.on('close', kill);
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name, dflt) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : dflt;
  };
  const target = arg('--node', '127.0.0.1:8080');
  const server = await startServer({ node: () => target, port: Number(arg('--port', '8081')) });
  console.log(`serving web/ on http://127.0.0.1:${server.address().port}, API and sockets from ${target}`);
}
