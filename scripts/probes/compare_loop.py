#!/usr/bin/env python3
"""One account compares its own files' versions in a loop from six loopback addresses
(127.0.0.40-45): three files of about 2 MB with two versions each. A hostile load for
measuring what honest people in other files see meanwhile (docs/reliability.md, "Compare
loops on one's own files"); run the load tool beside it. Loopback only; stops by itself.

    PORT=8080 DUR=30 nice -n 19 python3 scripts/probes/compare_loop.py
"""
import http.client, json, os, random, string, threading, time
PORT = int(os.environ.get("PORT", "8080")); DUR = float(os.environ.get("DUR", "24"))
def req(method, path, body=None, token=None, src="127.0.0.1"):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60, source_address=(src, 0))
    h = {"content-type": "application/json"}
    if token: h["authorization"] = "Bearer " + token
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
    r = c.getresponse(); data = r.read(); c.close()
    return r.status, data
email = "f5-%d@example.com" % random.randrange(10**9)
st, d = req("POST", "/api/signup", {"email": email, "password": "correct horse battery", "name": "F5"})
token = json.loads(d)["token"]
files = []
for f in range(3):
    doc = {"n%d" % k: {"t": "".join(random.choices(string.ascii_letters, k=180))} for k in range(10000)}
    st, d = req("POST", "/api/files", {"name": "F%d" % f, "doc": doc}, token)
    fid = json.loads(d)["id"]
    vids = []
    for v in range(2):
        st, d = req("POST", "/api/files/%s/versions" % fid, {"title": "v%d" % v}, token)
        vids.append(json.loads(d)["id"])
    files.append((fid, vids))
print("setup done", flush=True)
counts = {}
lock = threading.Lock()
def worker(n):
    src = "127.0.0.%d" % (40 + n)
    end = time.time() + DUR
    while time.time() < end:
        fid, vids = random.choice(files)
        st, _ = req("GET", "/api/files/%s/versions/compare?from=%d&to=%d" % (fid, vids[0], vids[1]), None, token, src)
        with lock: counts[st] = counts.get(st, 0) + 1
        if st != 200: time.sleep(0.02)
ts = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
[t.start() for t in ts]; [t.join() for t in ts]
print("answers", counts, flush=True)
