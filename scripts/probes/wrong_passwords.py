#!/usr/bin/env python3
"""Wrong passwords from many addresses: NADDR loopback addresses (127.BASE.x.y) each send PER
sign-ins with a wrong password for an unknown email, all at once, as fast as answers come.
Each makes the node hash a password. A hostile load for measuring what honest people see
meanwhile (docs/reliability.md, "Wrong passwords from many addresses"); run the load tool
beside it. Loopback only; stops by itself.

    PORT=8080 BASE=1 nice -n 19 python3 scripts/probes/wrong_passwords.py
"""
import http.client, json, os, random, threading, time
PORT = int(os.environ.get("PORT", "8080")); NADDR = int(os.environ.get("NADDR", "60")); PER = int(os.environ.get("PER", "20"))
BASE = int(os.environ.get("BASE", "1"))
def req(path, body, src):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60, source_address=(src, 0))
    c.request("POST", path, body=json.dumps(body), headers={"content-type": "application/json"})
    r = c.getresponse(); r.read(); c.close(); return r.status
email = "victim-%d@example.com" % random.randrange(10**9)
print("signup", req("/api/signup", {"email": email, "password": "correct horse battery", "name": "V"}, "127.0.0.1"), flush=True)
counts = {}; lock = threading.Lock()
def worker(n):
    src = "127.%d.%d.%d" % (BASE, n // 250, 1 + n % 250)
    for _ in range(PER):
        st = req("/api/signin", {"email": "u%d-%d-%s" % (n, random.randrange(10**9), email), "password": "wrong password %d" % random.randrange(10**6)}, src)
        with lock: counts[st] = counts.get(st, 0) + 1
t0 = time.time()
ts = [threading.Thread(target=worker, args=(n,)) for n in range(NADDR)]
[t.start() for t in ts]; [t.join() for t in ts]
print("answers", counts, "in %.1f s" % (time.time() - t0), flush=True)
