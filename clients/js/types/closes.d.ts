/**
 * @param {number} code the WebSocket close code (1006 for a lost connection)
 * @param {{movedBefore?: boolean}} [ctx] movedBefore: a 4009 was already followed at once
 *   since the last welcome (the second 4009 in a row waits the backoff).
 */
export function closeAction(code: number, { movedBefore }?: {
    movedBefore?: boolean;
}): {
    action: string;
    reason: string;
    delay?: undefined;
} | {
    action: string;
    delay: string;
    reason: string;
};
/**
 * The node's hint of when to come back: a 1013 at hello ends its close reason with
 * `; retry-ms=N` (N drawn by the node between 1 and 3 s, so a crowd told to come back
 * returns spread out). Returns N in ms (at most 30 s), or null when there is none.
 * @param {string} [reason]
 */
export function retryHint(reason?: string): number | null;
/** A random wait of 0-3 s after a 1012 (server restarting). */
export function restartDelay(random?: () => number): number;
