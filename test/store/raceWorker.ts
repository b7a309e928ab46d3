/**
 * Child process of the cross-process race tests (case spend-1, and the takes of a grant's last
 * use or of one plan slot). Forked with `execArgv: ['--import', 'tsx']`; talks to its parent over
 * IPC only:
 *
 *   parent → { type: 'open', store: 'sqlite', path } | { type: 'open', store: 'redis', url, namespace }
 *            | { type: 'open', store: 'postgres', url, schema }
 *   child  → { type: 'ready' }
 *   parent → { type: 'go', jti, attempts, nowMs }   (any number of rounds)
 *   child  → { type: 'armed' }
 *   parent → { type: 'fire' }
 *   child  → { type: 'result', outcomes: Record<outcome, number>, errors: string[] }
 *   parent → { type: 'take', kind: 'grant' | 'plan', target, attempts, nowMs }   (any number of rounds)
 *   child  → { type: 'armed' }
 *   parent → { type: 'fire' }
 *   child  → { type: 'taken', taken: number, refused: Record<reason, number>, errors: string[] }
 *   parent → { type: 'exit' }
 *
 * A round is armed, then fired: on 'go' or 'take' the child only gets the round ready and answers
 * 'armed'; the parent sends 'fire' once every child has answered (a start barrier by messages, not
 * by the clock: however slowly a busy machine delivers them, no child starts before all are
 * ready). On 'fire', 'go' fires `attempts` spends of the same jti at once and counts the outcomes;
 * 'take' likewise `attempts` takes of one grant's use (`target`: its id) or of one plan slot
 * (`target`: its key); a refused take counts under its reason (`'none'` for a slot not given).
 */
import type { ConfirmStore } from '../../src/store/confirmStore.js';
import type { SpendOutcome } from '../../src/store/ledger.js';

type OpenMessage =
  | { type: 'open'; store: 'sqlite'; path: string }
  | { type: 'open'; store: 'redis'; url: string; namespace: string }
  | { type: 'open'; store: 'postgres'; url: string; schema: string };
type GoMessage = { type: 'go'; jti: string; attempts: number; nowMs: number };
type TakeMessage = {
  type: 'take';
  kind: 'grant' | 'plan';
  target: string;
  attempts: number;
  nowMs: number;
};
type Message = OpenMessage | GoMessage | TakeMessage | { type: 'fire' } | { type: 'exit' };

let ledger: ConfirmStore | undefined;
/** The armed round, run on 'fire'. */
let armed: (() => Promise<void>) | undefined;

function send(message: unknown): void {
  process.send?.(message);
}

async function open(m: OpenMessage): Promise<ConfirmStore> {
  if (m.store === 'sqlite') {
    const { SqliteLedger } = await import('../../src/store/sqlite.js');
    // A deadline far beyond the race: contended spends wait (without blocking) for the write lock,
    // and this test is about atomicity, not about how fast a loaded machine gets through 1,000 spends.
    return new SqliteLedger({ path: m.path, timeoutMs: 60_000 });
  }
  if (m.store === 'postgres') {
    const { PostgresStore } = await import('../../src/store/postgres.js');
    // Likewise a deadline far beyond the race (the spends wait for the row's lock and a connection).
    return PostgresStore.open({ url: m.url, schema: m.schema, timeoutMs: 60_000 });
  }
  const { RedisLedger } = await import('../../src/store/redis.js');
  // Likewise: the default 2 s deadline is about a frozen Redis, and 1,000 scripts queued at once
  // on a busy machine can take longer than that without anything being wrong.
  return RedisLedger.open({ url: m.url, namespace: m.namespace, timeoutMs: 60_000 });
}

async function go(m: GoMessage): Promise<void> {
  const l = ledger;
  if (l === undefined) throw new Error('go before open');
  const outcomes: Record<SpendOutcome, number> = { spent: 0, 'already-spent': 0, unknown: 0, expired: 0 };
  const errors: string[] = [];
  const settled = await Promise.allSettled(Array.from({ length: m.attempts }, () => l.spend(m.jti, m.nowMs)));
  for (const s of settled) {
    if (s.status === 'fulfilled') outcomes[s.value]++;
    else errors.push(String((s.reason as Error)?.message ?? s.reason));
  }
  send({ type: 'result', outcomes, errors });
}

async function take(m: TakeMessage): Promise<void> {
  const l = ledger;
  if (l === undefined) throw new Error('take before open');
  let taken = 0;
  const refused: Record<string, number> = {};
  const errors: string[] = [];
  const one = async (): Promise<string | undefined> => {
    if (m.kind === 'grant') {
      const o = await l.takeGrantUse(m.target, m.nowMs);
      return o.taken ? undefined : o.reason;
    }
    return (await l.takePlanSlot(m.target, m.nowMs)) === undefined ? 'none' : undefined;
  };
  const settled = await Promise.allSettled(Array.from({ length: m.attempts }, one));
  for (const s of settled) {
    if (s.status === 'rejected') errors.push(String((s.reason as Error)?.message ?? s.reason));
    else if (s.value === undefined) taken++;
    else refused[s.value] = (refused[s.value] ?? 0) + 1;
  }
  send({ type: 'taken', taken, refused, errors });
}

process.on('message', (raw) => {
  const m = raw as Message;
  if (m.type === 'open') {
    open(m).then(
      (l) => {
        ledger = l;
        send({ type: 'ready' });
      },
      (e: unknown) => send({ type: 'fatal', error: String(e) }),
    );
  } else if (m.type === 'go' || m.type === 'take') {
    armed = m.type === 'go' ? () => go(m) : () => take(m);
    send({ type: 'armed' });
  } else if (m.type === 'fire') {
    const round = armed;
    armed = undefined;
    if (round === undefined) send({ type: 'fatal', error: 'fire before go or take' });
    else round().catch((e: unknown) => send({ type: 'fatal', error: String(e) }));
  } else if (m.type === 'exit') {
    void Promise.resolve(ledger?.close?.()).finally(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
