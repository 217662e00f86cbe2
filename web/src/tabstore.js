// What a tab keeps in the browser for one open file, so edits survive a reload:
//   atrium:outbox:<file>:<client>  the Outbox (pending edits and their ids)
//   atrium:doc:<file>:<client>     the last server state {version, doc, role}
//   atrium:alive:<file>:<client>   a heartbeat (ms) while a tab holds that client id
// The tab's client id lives in sessionStorage (kept across reloads of the tab). A new
// tab adopts the queue of a client whose tab is gone (no heartbeat for 10 s), so edits
// made offline in a closed tab still reach the server, under their original ids.

const ALIVE_MS = 10_000;

export function randomId(bytes = 18) {
  const a = new Uint8Array(bytes);
  crypto.getRandomValues(a);
  return btoa(String.fromCharCode(...a)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function keys(file, client) {
  return {
    outbox: `atrium:outbox:${file}:${client}`,
    doc: `atrium:doc:${file}:${client}`,
    alive: `atrium:alive:${file}:${client}`,
  };
}

/** Picks this tab's client id for `file`: its own from before a reload, an orphan, or new. */
export function chooseClient(file, { local = localStorage, session = sessionStorage, now = Date.now() } = {}) {
  const sKey = `atrium:client:${file}`;
  const mine = session.getItem(sKey);
  if (mine) return mine;
  const prefix = `atrium:outbox:${file}:`;
  for (let i = 0; i < local.length; i++) {
    const k = local.key(i);
    if (!k || !k.startsWith(prefix)) continue;
    const client = k.slice(prefix.length);
    const alive = Number(local.getItem(keys(file, client).alive) ?? 0);
    if (now - alive > ALIVE_MS) {
      session.setItem(sKey, client);
      return client;
    }
  }
  const client = randomId();
  session.setItem(sKey, client);
  return client;
}

/** Keeps the heartbeat of `client` while the tab is open; returns a stop function. */
export function holdClient(file, client, { local = localStorage } = {}) {
  const k = keys(file, client).alive;
  const beat = () => {
    try {
      local.setItem(k, String(Date.now()));
    } catch {
      // storage full: adoption by another tab is only a convenience
    }
  };
  beat();
  const timer = setInterval(beat, 3000);
  return () => {
    clearInterval(timer);
    local.removeItem(k);
  };
}

export function loadDoc(file, client, local = localStorage) {
  try {
    const raw = local.getItem(keys(file, client).doc);
    return raw ? JSON.parse(raw) : null;
  } catch {
    return null;
  }
}

export function saveDoc(file, client, record, local = localStorage) {
  try {
    local.setItem(keys(file, client).doc, JSON.stringify(record));
  } catch {
    // over quota: a reload will fetch the whole document instead
  }
}
