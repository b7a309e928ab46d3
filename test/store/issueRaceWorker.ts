/**
 * Child process of the cross-process issue race: several processes issue at once
 * into one SQLite ledger file with tight bounds. Forked with
 * `execArgv: ['--import', 'tsx']`; talks to its parent over IPC only:
 *
 *   parent → { type: 'open', path, maxPerPrincipal, maxTotal }
 *   child  → { type: 'ready' }
 *   parent → { type: 'go', principals, attempts, nowMs }
 *   child  → { type: 'armed' }
 *   parent → { type: 'fire' }
 *   child  → { type: 'result', issued: string[], refused: { principal, total }, errors: string[] }
 *   parent → { type: 'exit' }
 *
 * On 'go' the child only gets the round ready and answers 'armed'; the parent sends 'fire' once
 * every child has answered (a start barrier by messages, not by the clock). On 'fire' the child
 * fires `attempts` issues of fresh jtis at once, the i-th for `principals[i % length]`.
 */
import { randomUUID } from 'node:crypto';
import type { SqliteLedger } from '../../src/store/sqlite.js';

type Message =
  | { type: 'open'; path: string; maxPerPrincipal: number; maxTotal: number }
  | { type: 'go'; principals: string[]; attempts: number; nowMs: number }
  | { type: 'fire' }
  | { type: 'exit' };

let ledger: SqliteLedger | undefined;
/** The armed round, run on 'fire'. */
let armed: (() => Promise<void>) | undefined;

async function go(m: Extract<Message, { type: 'go' }>): Promise<void> {
  const l = ledger;
  if (l === undefined) throw new Error('go before open');
  const issued: string[] = [];
  const refused = { principal: 0, total: 0 };
  const errors: string[] = [];
  await Promise.all(
    Array.from({ length: m.attempts }, async (_, i) => {
      const jti = randomUUID();
      try {
        await l.issue(jti, m.principals[i % m.principals.length]!, m.nowMs + 300_000, m.nowMs);
        issued.push(jti);
      } catch (error) {
        const e = error as { code?: string; message?: string };
        if (e.code === 'ERR_CONFIRM_CAPACITY')
          refused[e.message?.includes('for this principal') ? 'principal' : 'total']++;
        else errors.push(`${e.code ?? ''} ${e.message ?? String(error)}`);
      }
    }),
  );
  process.send?.({ type: 'result', issued, refused, errors });
}

process.on('message', (raw) => {
  const m = raw as Message;
  if (m.type === 'open') {
    import('../../src/store/sqlite.js').then(
      ({ SqliteLedger }) => {
        // A deadline far beyond the race: contended issues wait (without blocking) for the write lock.
        ledger = new SqliteLedger({
          path: m.path,
          maxPerPrincipal: m.maxPerPrincipal,
          maxTotal: m.maxTotal,
          timeoutMs: 60_000,
        });
        process.send?.({ type: 'ready' });
      },
      (e: unknown) => process.send?.({ type: 'fatal', error: String(e) }),
    );
  } else if (m.type === 'go') {
    armed = () => go(m);
    process.send?.({ type: 'armed' });
  } else if (m.type === 'fire') {
    const round = armed;
    armed = undefined;
    if (round === undefined) process.send?.({ type: 'fatal', error: 'fire before go' });
    else round().catch((e: unknown) => process.send?.({ type: 'fatal', error: String(e) }));
  } else {
    void Promise.resolve(ledger?.close()).finally(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
