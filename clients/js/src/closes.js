// What a client does when its socket closes: the contract's table of close codes as a
// pure function, so it can be tested and copied.
//
// Returns {action, delay, reason}:
//   action: 'reconnect' | 'stop' | 'wait-user' (retry only when the person asks) |
//           'sign-in' (stop and ask the person to sign in)
//   delay:  for 'reconnect': 'backoff' (the next backoff wait), 'now' (at once) or
//           'restart' (a random 0-3 s, then backoff for later tries)
//   reason: a short human sentence for the status bar.

/**
 * @param {number} code the WebSocket close code (1006 for a lost connection)
 * @param {{movedBefore?: boolean}} [ctx] movedBefore: a 4009 was already followed at once
 *   since the last welcome (the second 4009 in a row waits the backoff).
 */
export function closeAction(code, { movedBefore = false } = {}) {
  switch (code) {
    case 1000:
      return { action: 'stop', reason: 'closed' };
    case 1003:
    case 1007:
    case 1009:
      return { action: 'stop', reason: 'the client sent something the server cannot take (a bug)' };
    case 1012:
      return { action: 'reconnect', delay: 'restart', reason: 'the server is restarting' };
    case 1013:
      return { action: 'reconnect', delay: 'backoff', reason: 'the server is busy' };
    case 4000:
      return { action: 'reconnect', delay: 'backoff', reason: 'no hello in time' };
    case 4001:
      return { action: 'sign-in', reason: 'not signed in, or the link key is no longer valid' };
    case 4003:
      return { action: 'stop', reason: 'you no longer have access to this file' };
    case 4004:
      return { action: 'stop', reason: 'this file was deleted' };
    case 4006:
      return { action: 'stop', reason: 'you were removed from this file' };
    case 4008:
      return { action: 'reconnect', delay: 'backoff', reason: 'the connection was too slow' };
    case 4009:
      return movedBefore
        ? { action: 'reconnect', delay: 'backoff', reason: 'the file moved' }
        : { action: 'reconnect', delay: 'now', reason: 'the file moved' };
    case 4010:
      return { action: 'stop', reason: 'this file was opened again by this tab' };
    case 4013:
      return { action: 'reconnect', delay: 'backoff', reason: 'too many messages' };
    case 4029:
      return { action: 'wait-user', reason: 'too many open connections for you' };
    case 4031:
      return { action: 'reconnect', delay: 'backoff', reason: 'the file is full' };
    default:
      return { action: 'reconnect', delay: 'backoff', reason: 'connection lost' };
  }
}

/**
 * The node's hint of when to come back: a 1013 at hello ends its close reason with
 * `; retry-ms=N` (N drawn by the node between 1 and 3 s, so a crowd told to come back
 * returns spread out). Returns N in ms (at most 30 s), or null when there is none.
 * @param {string} [reason]
 */
export function retryHint(reason = '') {
  const m = /retry-ms=(\d+)\s*$/.exec(reason);
  return m ? Math.min(Number(m[1]), 30_000) : null;
}

/** A random wait of 0-3 s after a 1012 (server restarting). */
export function restartDelay(random = Math.random) {
  return random() * 3000;
}
