/**
 * Parent side of the cross-process races: N forked processes fire M concurrent spends each at one
 * jti (case spend-1), or M concurrent takes each of one grant's last use or one plan slot, round
 * after round, or M concurrent issues each into one SQLite file. Every round starts behind a
 * barrier of messages ({@link armAndFire}), never a clock.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { ConfirmStore } from '../../src/store/confirmStore.js';
import type { Ledger, SpendOutcome } from '../../src/store/ledger.js';
import { PROCESS_DEADLINE_MS } from '../helpers/deadlines.js';

const WORKER = fileURLToPath(new URL('./raceWorker.ts', import.meta.url));
const REPO = fileURLToPath(new URL('../../', import.meta.url));

export type StoreSpec =
  | { store: 'sqlite'; path: string }
  | { store: 'redis'; url: string; namespace: string }
  | { store: 'postgres'; url: string; schema: string };

export interface RoundResult {
  jti: string;
  outcomes: Record<SpendOutcome, number>;
  errors: string[];
}

type Reply =
  | { type: 'ready' }
  | { type: 'armed' }
  | { type: 'result'; outcomes: Record<SpendOutcome, number>; errors: string[] }
  | { type: 'taken'; taken: number; refused: Record<string, number>; errors: string[] }
  | { type: 'fatal'; error: string };

function nextReply(child: ChildProcess, timeoutMs: number): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`race worker ${child.pid} did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (m: unknown): void => {
      cleanup();
      const r = m as Reply;
      if (r.type === 'fatal') reject(new Error(`race worker failed: ${r.error}`));
      else resolve(r);
    };
    const onExit = (code: number | null): void => {
      cleanup();
      reject(new Error(`race worker ${child.pid} exited with ${code}`));
    };
    function cleanup(): void {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    }
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

/** Forks `count` workers of `worker` and sends each `open`; resolves once every one answered 'ready'. */
async function startWorkers(worker: string, count: number, open: object): Promise<ChildProcess[]> {
  const children = Array.from({ length: count }, () =>
    fork(worker, [], { cwd: REPO, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  try {
    const ready = children.map((c) => nextReply(c, PROCESS_DEADLINE_MS));
    for (const c of children) c.send(open);
    for (const r of await Promise.all(ready)) if (r.type !== 'ready') throw new Error('worker not ready');
  } catch (e) {
    await stopWorkers(children);
    throw e;
  }
  return children;
}

/**
 * One round behind a start barrier of messages: sends `round` to every worker, waits until each has
 * answered 'armed' (ready to fire), then sends each 'fire' and resolves with their replies. No
 * worker starts before all are ready, however slowly a busy machine runs them: by order, not time.
 */
async function armAndFire(children: readonly ChildProcess[], round: object): Promise<Reply[]> {
  const armed = children.map((c) => nextReply(c, PROCESS_DEADLINE_MS));
  for (const c of children) c.send(round);
  for (const r of await Promise.all(armed)) if (r.type !== 'armed') throw new Error(`worker not armed: ${r.type}`);
  const replies = children.map((c) => nextReply(c, PROCESS_DEADLINE_MS));
  for (const c of children) c.send({ type: 'fire' });
  return Promise.all(replies);
}

/**
 * Forks `processes` workers on `spec`, then for each round issues a fresh jti
 * through `issuer` and lets every worker fire `attempts` spends of it at once.
 */
export async function raceSpends(opts: {
  spec: StoreSpec;
  issuer: Ledger;
  processes: number;
  attempts: number;
  rounds: number;
}): Promise<RoundResult[]> {
  const children = await startWorkers(WORKER, opts.processes, { type: 'open', ...opts.spec });
  try {
    const results: RoundResult[] = [];
    for (let round = 0; round < opts.rounds; round++) {
      const jti = randomUUID();
      const nowMs = Date.now();
      await opts.issuer.issue(jti, 'racer', nowMs + 300_000, nowMs);
      const replies = await armAndFire(children, { type: 'go', jti, attempts: opts.attempts, nowMs: nowMs + 1 });
      const outcomes: Record<SpendOutcome, number> = { spent: 0, 'already-spent': 0, unknown: 0, expired: 0 };
      const errors: string[] = [];
      for (const r of replies) {
        if (r.type !== 'result') throw new Error('unexpected reply');
        for (const k of Object.keys(outcomes) as SpendOutcome[]) outcomes[k] += r.outcomes[k];
        errors.push(...r.errors);
      }
      results.push({ jti, outcomes, errors });
    }
    return results;
  } finally {
    await stopWorkers(children);
  }
}

/** What every process of one round of {@link raceTakes} saw, summed. */
export interface TakeRoundResult {
  /** The grant's id or the slot's key. */
  target: string;
  taken: number;
  /** Refused takes by reason (`'exhausted'`, … for a grant; `'none'` for a slot). */
  refused: Record<string, number>;
  errors: string[];
}

/**
 * Forks `processes` workers on `spec`, then for each round creates, through `creator`, a grant
 * with one use left (`maxUses` 2: the approving call was the first) or a plan with one slot, and
 * lets every worker fire `attempts` takes of that use or slot at once.
 */
export async function raceTakes(opts: {
  spec: StoreSpec;
  creator: ConfirmStore;
  kind: 'grant' | 'plan';
  processes: number;
  attempts: number;
  rounds: number;
}): Promise<TakeRoundResult[]> {
  const children = await startWorkers(WORKER, opts.processes, { type: 'open', ...opts.spec });
  try {
    const results: TakeRoundResult[] = [];
    for (let round = 0; round < opts.rounds; round++) {
      const nowMs = Date.now();
      const jti = randomUUID();
      await opts.creator.issue(jti, 'racer', nowMs + 300_000, nowMs);
      const id = randomBytes(16).toString('base64url');
      let target: string;
      let created: unknown;
      if (opts.kind === 'grant') {
        target = id;
        created = await opts.creator.spendGranting(jti, nowMs, {
          id,
          audience: 'race',
          principal: 'racer',
          tool: 'delete_file',
          scope: '{"path":"any"}',
          binding: '',
          summary: 'race',
          policyDigest: randomBytes(32).toString('base64url'),
          approver: 'client',
          maxUses: 2,
          createdAtMs: nowMs,
          expiresAtMs: nowMs + 300_000,
        });
      } else {
        target = randomBytes(32).toString('base64url');
        created = await opts.creator.spendPlanning(jti, nowMs, {
          id,
          audience: 'race',
          principal: 'racer',
          binding: '',
          slots: [{ key: target, tool: 'delete_file', identity: '{}' }],
          approver: 'client',
          createdAtMs: nowMs,
          expiresAtMs: nowMs + 300_000,
        });
      }
      if ((created as { created?: string }).created !== 'created')
        throw new Error(`round ${round}: nothing created (${JSON.stringify(created)})`);
      const replies = await armAndFire(children, {
        type: 'take',
        kind: opts.kind,
        target,
        attempts: opts.attempts,
        nowMs: nowMs + 1,
      });
      const result: TakeRoundResult = { target, taken: 0, refused: {}, errors: [] };
      for (const r of replies) {
        if (r.type !== 'taken') throw new Error('unexpected reply');
        result.taken += r.taken;
        for (const [reason, n] of Object.entries(r.refused)) result.refused[reason] = (result.refused[reason] ?? 0) + n;
        result.errors.push(...r.errors);
      }
      results.push(result);
    }
    return results;
  } finally {
    await stopWorkers(children);
  }
}

/** Asks each worker to exit, and kills the one still there 5 s later. */
function stopWorkers(children: ReadonlyArray<ReturnType<typeof fork>>): Promise<unknown> {
  return Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          const timer = setTimeout(() => {
            c.kill('SIGKILL');
            resolve();
          }, 5_000);
          c.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          c.send({ type: 'exit' });
        }),
    ),
  );
}

const ISSUE_WORKER = fileURLToPath(new URL('./issueRaceWorker.ts', import.meta.url));

/** What one process of {@link raceIssues} saw. */
export interface IssueRaceResult {
  issued: string[];
  refused: { principal: number; total: number };
  errors: string[];
}

/**
 * Forks `processes` workers, each opening its own SqliteLedger on `path` with the given bounds,
 * and lets each fire `attempts` concurrent issues of fresh jtis once all are ready
 * (the i-th for `principals[i % length]`). Resolves with each process's outcomes.
 */
export async function raceIssues(opts: {
  path: string;
  maxPerPrincipal: number;
  maxTotal: number;
  principals: string[];
  processes: number;
  attempts: number;
}): Promise<IssueRaceResult[]> {
  const children = await startWorkers(ISSUE_WORKER, opts.processes, {
    type: 'open',
    path: opts.path,
    maxPerPrincipal: opts.maxPerPrincipal,
    maxTotal: opts.maxTotal,
  });
  try {
    const go = { type: 'go', principals: opts.principals, attempts: opts.attempts, nowMs: Date.now() };
    return (await armAndFire(children, go)) as unknown as IssueRaceResult[];
  } finally {
    await stopWorkers(children);
  }
}
