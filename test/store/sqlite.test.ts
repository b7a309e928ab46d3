import { randomUUID } from 'node:crypto';
import { expectUnavailable, rejection } from '../helpers/rejections.js';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfirmLedgerUnavailableError } from '../../src/errors.js';
import { SqliteLedger } from '../../src/store/sqlite.js';
import { ledgerContract, type HeldStore } from './ledgerContract.js';
import { grantStoreContract, recordId, slotKey } from './grantContract.js';
import { raceIssues, raceSpends, raceTakes } from './race.js';
import { holdWriteLock } from './sqliteLock.js';

const dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const freshPath = (): string => join(dir, `${randomUUID()}.db`);

/** Held = another process (a child) holds the file's write lock with BEGIN IMMEDIATE. */
const held: HeldStore = {
  make: async ({ timeoutMs }) => new SqliteLedger({ path: freshPath(), timeoutMs }),
  sibling: async (ledger, { timeoutMs }) => new SqliteLedger({ path: (ledger as SqliteLedger).path, timeoutMs }),
  hold: (ledger) => holdWriteLock((ledger as SqliteLedger).path),
  // The lock is held until released, so any deadline passes while held.
  shortTimeoutMs: 200,
  refusedCallsAppliedLater: false,
};

ledgerContract('SqliteLedger', (bounds) => new SqliteLedger({ path: freshPath(), ...bounds }), { held });
grantStoreContract('SqliteLedger', (bounds) => new SqliteLedger({ path: freshPath(), ...bounds }));

/** The next turn of the event loop's timers phase: fires only if nothing blocks the loop. */
const timerTurn = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

describe('SqliteLedger', () => {
  it('reports kind sqlite and shared true', async () => {
    const ledger = new SqliteLedger({ path: freshPath() });
    expect(ledger.kind).toBe('sqlite');
    expect(ledger.shared).toBe(true);
    await ledger.close();
  });

  it('puts the database in WAL mode, with a deadline of 2 s unless timeoutMs says otherwise', async () => {
    const path = freshPath();
    const ledger = new SqliteLedger({ path });
    expect(ledger.isReady).toBe(true);
    expect(ledger.timeoutMs).toBe(2_000);
    const db = new Database(path, { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
    const other = new SqliteLedger({ path, timeoutMs: 1234 });
    expect(other.timeoutMs).toBe(1234);
    await Promise.all([ledger.close(), other.close()]);
  });

  it('creates a new file with 1 KiB pages, and opens an existing 4 KiB-page file as it is', async () => {
    const fresh = freshPath();
    const ledger = new SqliteLedger({ path: fresh });
    const id = randomUUID();
    await ledger.issue(id, 'alice', Date.now() + 60_000);
    const db = new Database(fresh, { readonly: true });
    expect(db.pragma('page_size', { simple: true })).toBe(1024);
    db.close();
    const old = freshPath();
    const creator = new Database(old);
    creator.pragma('journal_mode = WAL'); // a file made with SQLite's default page size
    creator.close();
    const onOld = new SqliteLedger({ path: old });
    const other = randomUUID();
    await onOld.issue(other, 'alice', Date.now() + 60_000);
    expect(await onOld.spend(other, Date.now())).toBe('spent');
    const check = new Database(old, { readonly: true });
    expect(check.pragma('page_size', { simple: true })).toBe(4096);
    check.close();
    expect(await ledger.spend(id, Date.now())).toBe('spent');
    await Promise.all([ledger.close(), onOld.close()]);
  });

  it("checkpoints a 1 KiB-page file's WAL at 4,000 pages (the bytes of SQLite's default 1,000 pages of 4 KiB), not at 1,000 pages", async () => {
    const path = freshPath();
    const ledger = new SqliteLedger({ path });
    const frameBytes = 24 + 1024; // WAL frame header + one page
    const walFrames = (): number => Math.floor((statSync(`${path}-wal`).size - 32) / frameBytes);
    const now = Date.now();
    let most = 0;
    // ~5-8 frames per pair: 1,500 pairs write well past 4,000 frames, so the WAL must have been checkpointed and reused.
    for (let i = 0; i < 1_500; i++) {
      const jti = randomUUID();
      await ledger.issue(jti, 'alice', now + 60_000, now);
      expect(await ledger.spend(jti, now)).toBe('spent');
      most = Math.max(most, walFrames());
    }
    // Past SQLite's default of 1,000 pages, and never much beyond 4,000 (one commit's frames at most).
    expect(most).toBeGreaterThan(3_000);
    expect(most).toBeLessThan(4_100);
    await ledger.close();
  });

  it('shares entries between two ledgers opened on the same file', async () => {
    const path = freshPath();
    const a = new SqliteLedger({ path });
    const b = await SqliteLedger.open({ path });
    const id = randomUUID();
    await a.issue(id, 'alice', Date.now() + 60_000);
    expect(await b.spend(id, Date.now())).toBe('spent');
    expect(await a.spend(id, Date.now())).toBe('already-spent');
    await Promise.all([a.close(), b.close()]);
  });

  it('enforces maxPerPrincipal across ledgers sharing one file', async () => {
    const path = freshPath();
    const a = new SqliteLedger({ path, maxPerPrincipal: 2 });
    const b = new SqliteLedger({ path, maxPerPrincipal: 2 });
    const now = Date.now();
    await a.issue(randomUUID(), 'alice', now + 60_000, now);
    await b.issue(randomUUID(), 'alice', now + 60_000, now);
    const error = await rejection(a.issue(randomUUID(), 'alice', now + 60_000, now));
    expect((error as { code?: string }).code).toBe('ERR_CONFIRM_CAPACITY');
    await Promise.all([a.close(), b.close()]);
  });

  it('sweeps expired entries and tombstones from the file', async () => {
    const path = freshPath();
    const ledger = new SqliteLedger({ path });
    const now = Date.now();
    const spent = randomUUID();
    await ledger.issue(spent, 'alice', now + 1_000, now);
    await ledger.issue(randomUUID(), 'alice', now + 1_000, now);
    await ledger.issue(randomUUID(), 'bob', now + 60_000, now);
    expect(await ledger.spend(spent, now + 1)).toBe('spent');
    await ledger.sweep(now + 1_000);
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT count(*) AS n FROM mcp_confirm_ledger').get()).toEqual({ n: 1 });
    expect(
      db.prepare('SELECT scope, name, n FROM mcp_confirm_ledger_counts WHERE n <> 0 ORDER BY scope, name').all(),
    ).toEqual([
      { scope: 'principal', name: 'bob', n: 1 },
      { scope: 'total', name: '', n: 1 },
    ]);
    db.close();
    expect(await ledger.spend(spent, now + 1_001)).toBe('unknown');
    await ledger.close();
  });

  it('bounds tombstones to maxTotal, dropping the oldest expiry first', async () => {
    const ledger = new SqliteLedger({ path: freshPath(), maxTotal: 3 });
    const now = Date.now();
    const ids = Array.from({ length: 5 }, randomUUID);
    for (const [i, id] of ids.entries()) {
      await ledger.issue(id, 'alice', now + 60_000 + i, now);
      expect(await ledger.spend(id, now)).toBe('spent');
    }
    await ledger.sweep(now);
    const outcomes = await Promise.all(ids.map((id) => ledger.spend(id, now)));
    expect(outcomes).toEqual(['unknown', 'unknown', 'already-spent', 'already-spent', 'already-spent']);
    await ledger.close();
  });

  it('refuses bad options with RangeError', () => {
    expect(() => new SqliteLedger({ path: '' })).toThrow(RangeError);
    expect(() => new SqliteLedger({ path: ':memory:' })).toThrow(RangeError);
    expect(() => new SqliteLedger({ path: freshPath(), maxTotal: 0 })).toThrow(RangeError);
    expect(() => new SqliteLedger({ path: freshPath(), maxPerPrincipal: 1.5 })).toThrow(RangeError);
    expect(() => new SqliteLedger({ path: freshPath(), timeoutMs: 0 })).toThrow(/timeoutMs must be a positive integer/);
    expect(() => new SqliteLedger({ path: freshPath(), timeoutMs: Number.POSITIVE_INFINITY })).toThrow(RangeError);
  });

  it('refuses non-finite times with RangeError', async () => {
    const ledger = new SqliteLedger({ path: freshPath() });
    await expect(ledger.issue(randomUUID(), 'alice', Number.NaN)).rejects.toBeInstanceOf(RangeError);
    await expect(ledger.spend(randomUUID(), Number.POSITIVE_INFINITY)).rejects.toBeInstanceOf(RangeError);
    await ledger.close();
  });

  describe('fails closed (spend-4)', () => {
    it('throws ERR_CONFIRM_LEDGER_UNAVAILABLE when the directory of the file is missing', () => {
      let error: unknown;
      try {
        new SqliteLedger({ path: join(dir, 'no-such-dir', 'ledger.db') });
      } catch (e) {
        error = e;
      }
      expectUnavailable(error);
    });

    it('throws ERR_CONFIRM_LEDGER_UNAVAILABLE when the file is not a SQLite database', async () => {
      const path = freshPath();
      writeFileSync(path, 'not a database, just garbage bytes\n'.repeat(200));
      let error: unknown;
      try {
        new SqliteLedger({ path });
      } catch (e) {
        error = e;
      }
      expectUnavailable(error);
      expect(((error as Error).cause as { code?: string }).code).toBe('SQLITE_NOTADB');
      await expect(SqliteLedger.open({ path })).rejects.toBeInstanceOf(ConfirmLedgerUnavailableError);
    });

    it('rejects spend and issue with ERR_CONFIRM_LEDGER_UNAVAILABLE once the tables are gone', async () => {
      const path = freshPath();
      const ledger = new SqliteLedger({ path });
      const id = randomUUID();
      await ledger.issue(id, 'alice', Date.now() + 60_000);
      const vandal = new Database(path);
      vandal.exec('DROP TABLE mcp_confirm_ledger; DROP TABLE mcp_confirm_ledger_counts;');
      vandal.close();
      expectUnavailable(await rejection(ledger.spend(id, Date.now())));
      expectUnavailable(await rejection(ledger.issue(randomUUID(), 'alice', Date.now() + 60_000)));
      await ledger.close();
    });

    it('while another process holds the write lock, a ledger on another file answers and the locked spend is refused afterwards, nothing spent', async () => {
      const path = freshPath();
      const ledger = new SqliteLedger({ path, timeoutMs: 200 });
      const elsewhere = new SqliteLedger({ path: freshPath() });
      const id = randomUUID();
      await ledger.issue(id, 'alice', Date.now() + 60_000);
      const lock = await holdWriteLock(path);
      const events: string[] = [];
      try {
        const spending = rejection(ledger.spend(id, Date.now())).then((e) => {
          events.push('locked spend refused');
          return e;
        });
        await timerTurn();
        const other = randomUUID();
        await elsewhere.issue(other, 'bob', Date.now() + 60_000);
        events.push(`other file: ${await elsewhere.spend(other, Date.now())}`);
        expectUnavailable(await spending);
      } finally {
        await lock.release();
      }
      expect(events).toEqual(['other file: spent', 'locked spend refused']);
      // The lock is gone: the same confirmation is still outstanding and spends once.
      expect(await ledger.spend(id, Date.now())).toBe('spent');
      await Promise.all([ledger.close(), elsewhere.close()]);
    });

    it('opens a file that has its schema at once while another process holds the write lock (no write needed to open)', async () => {
      const path = freshPath();
      await new SqliteLedger({ path }).close();
      const lock = await holdWriteLock(path);
      let ledger: SqliteLedger | undefined;
      try {
        ledger = await SqliteLedger.open({ path, timeoutMs: 60_000 });
        expect(ledger.isReady).toBe(true);
      } finally {
        await lock.release();
      }
      const id = randomUUID();
      await ledger.issue(id, 'alice', Date.now() + 60_000);
      expect(await ledger.spend(id, Date.now())).toBe('spent');
      await ledger.close();
    });

    it('never waits in the constructor when a new file is locked: the first issue waits without blocking, and succeeds once the lock ends', async () => {
      const path = freshPath();
      const creator = new Database(path);
      creator.pragma('journal_mode = WAL'); // an empty WAL database, as a second process would find it
      creator.close();
      const lock = await holdWriteLock(path);
      const events: string[] = [];
      let ledger: SqliteLedger | undefined;
      let issuing: Promise<unknown> | undefined;
      const id = randomUUID();
      try {
        ledger = new SqliteLedger({ path, timeoutMs: 60_000 });
        events.push('constructed');
        expect(ledger.isReady).toBe(false);
        issuing = ledger.issue(id, 'alice', Date.now() + 60_000).then(() => events.push('issued'));
        await timerTurn();
        events.push('timer');
        expect(events).toEqual(['constructed', 'timer']);
      } finally {
        await lock.release();
      }
      await issuing;
      expect(events).toEqual(['constructed', 'timer', 'issued']);
      expect(ledger.isReady).toBe(true);
      expect(await ledger.spend(id, Date.now())).toBe('spent');
      await ledger.close();
    });

    it('open() of a new file that stays locked is refused with ERR_CONFIRM_LEDGER_UNAVAILABLE after timeoutMs, a timer answered first', async () => {
      const path = freshPath();
      const creator = new Database(path);
      creator.pragma('journal_mode = WAL');
      creator.close();
      const lock = await holdWriteLock(path);
      const events: string[] = [];
      try {
        const opening = rejection(SqliteLedger.open({ path, timeoutMs: 200 })).then((e) => {
          events.push('open refused');
          return e;
        });
        await timerTurn();
        events.push('timer');
        const error = await opening;
        expectUnavailable(error);
        expect(((error as Error).cause as Error).message).toMatch(/SQLITE_BUSY/);
      } finally {
        await lock.release();
      }
      expect(events).toEqual(['timer', 'open refused']);
    });

    it('sweep() waits without blocking and is refused with ERR_CONFIRM_LEDGER_UNAVAILABLE after timeoutMs while another process holds the write lock', async () => {
      const path = freshPath();
      const ledger = new SqliteLedger({ path, timeoutMs: 200 });
      const lock = await holdWriteLock(path);
      const events: string[] = [];
      try {
        const sweeping = rejection(ledger.sweep()).then((e) => {
          events.push('sweep refused');
          return e;
        });
        await timerTurn();
        events.push('timer');
        expectUnavailable(await sweeping);
      } finally {
        await lock.release();
      }
      expect(events).toEqual(['timer', 'sweep refused']);
      await ledger.sweep();
      await ledger.close();
    });

    it('close() refuses a call still waiting for the lock with ERR_CONFIRM_LEDGER_UNAVAILABLE', async () => {
      const path = freshPath();
      const ledger = new SqliteLedger({ path, timeoutMs: 60_000 });
      const id = randomUUID();
      await ledger.issue(id, 'alice', Date.now() + 60_000);
      const lock = await holdWriteLock(path);
      try {
        const spending = rejection(ledger.spend(id, Date.now()));
        await timerTurn();
        await ledger.close();
        expectUnavailable(await spending);
      } finally {
        await lock.release();
      }
      const after = new SqliteLedger({ path });
      expect(await after.spend(id, Date.now())).toBe('spent');
      await after.close();
    });

    it('rejects with ERR_CONFIRM_LEDGER_UNAVAILABLE after close, and close is idempotent', async () => {
      const ledger = new SqliteLedger({ path: freshPath() });
      const id = randomUUID();
      await ledger.issue(id, 'alice', Date.now() + 60_000);
      await ledger.close();
      await ledger.close();
      expectUnavailable(await rejection(ledger.spend(id, Date.now())));
      expectUnavailable(await rejection(ledger.issue(randomUUID(), 'alice', Date.now() + 60_000)));
    });
  });

  it('issues exactly maxTotal when 4 processes fire 30 concurrent issues each at one file: 40 issued, 80 refused ERR_CONFIRM_CAPACITY, each issued jti spent once', async () => {
    const path = freshPath();
    const results = await raceIssues({
      path,
      maxPerPrincipal: 1_000,
      maxTotal: 40,
      principals: Array.from({ length: 10 }, (_, i) => `p${i}`),
      processes: 4,
      attempts: 30,
    });
    expect(results.flatMap((r) => r.errors)).toEqual([]);
    const issued = results.flatMap((r) => r.issued);
    expect(issued).toHaveLength(40);
    expect(results.reduce((n, r) => n + r.refused.total, 0)).toBe(80);
    expect(results.reduce((n, r) => n + r.refused.principal, 0)).toBe(0);
    const check = new Database(path, { readonly: true });
    expect(check.prepare('SELECT count(*) AS n FROM mcp_confirm_ledger WHERE spent = 0').get()).toEqual({ n: 40 });
    check.close();
    const ledger = new SqliteLedger({ path, maxTotal: 40 });
    const now = Date.now();
    for (const jti of issued) expect(await ledger.spend(jti, now)).toBe('spent');
    for (const jti of issued) expect(await ledger.spend(jti, now)).toBe('already-spent');
    // The slots are free again: the bound counts outstanding confirmations, not tombstones.
    await ledger.issue(randomUUID(), 'p0', now + 60_000, now);
    await ledger.close();
  });

  it('issues exactly maxPerPrincipal for one principal when 4 processes fire 30 concurrent issues each: 25 issued, 95 refused for the principal', async () => {
    const path = freshPath();
    const results = await raceIssues({
      path,
      maxPerPrincipal: 25,
      maxTotal: 1_000,
      principals: ['alice'],
      processes: 4,
      attempts: 30,
    });
    expect(results.flatMap((r) => r.errors)).toEqual([]);
    expect(results.flatMap((r) => r.issued)).toHaveLength(25);
    expect(results.reduce((n, r) => n + r.refused.principal, 0)).toBe(95);
    expect(results.reduce((n, r) => n + r.refused.total, 0)).toBe(0);
    const check = new Database(path, { readonly: true });
    expect(
      check.prepare("SELECT count(*) AS n FROM mcp_confirm_ledger WHERE spent = 0 AND principal = 'alice'").get(),
    ).toEqual({ n: 25 });
    check.close();
  });

  it('gives exactly one spent across 4 processes x 250 concurrent spends of one jti, every round (spend-1)', async () => {
    const path = freshPath();
    const issuer = new SqliteLedger({ path });
    try {
      const rounds = await raceSpends({
        spec: { store: 'sqlite', path },
        issuer,
        processes: 4,
        attempts: 250,
        rounds: 10,
      });
      expect(rounds).toHaveLength(10);
      for (const r of rounds) {
        expect(r.errors).toEqual([]);
        expect(r.outcomes).toEqual({ spent: 1, 'already-spent': 999, unknown: 0, expired: 0 });
      }
    } finally {
      await issuer.close();
    }
  });
});

describe('SqliteLedger file mode', () => {
  it('creates a new ledger file, and with it its -wal and -shm files, readable by the owner only (0600); an existing file keeps its mode (control)', async () => {
    const path = join(dir, `mode-${randomUUID()}.db`);
    const ledger = new SqliteLedger({ path });
    const now = Date.now();
    await ledger.issue(randomUUID(), 'p', now + 60_000, now);
    for (const f of [path, `${path}-wal`, `${path}-shm`]) expect((statSync(f).mode & 0o777).toString(8)).toBe('600');
    await ledger.close();
    const existing = join(dir, `mode-existing-${randomUUID()}.db`);
    writeFileSync(existing, '', { mode: 0o640 });
    const kept = new SqliteLedger({ path: existing });
    await kept.issue(randomUUID(), 'p', now + 60_000, now);
    expect((statSync(existing).mode & 0o777).toString(8)).toBe('640');
    await kept.close();
  });
});

describe('SqliteLedger audit heads', () => {
  const schemaOf = (path: string): Array<{ type: string; name: string; sql: string | null }> => {
    const db = new Database(path, { readonly: true });
    try {
      return db.prepare('SELECT type, name, sql FROM sqlite_schema ORDER BY type, name').all() as Array<{
        type: string;
        name: string;
        sql: string | null;
      }>;
    } finally {
      db.close();
    }
  };

  it('keeps heads in a table of their own (mcp_confirm_audit_heads): every table of the ledger and the approvals stays exactly as it was; reading heads from a file without that table creates nothing', async () => {
    const path = freshPath();
    const ledger = new SqliteLedger({ path });
    const now = Date.now();
    const id = randomUUID();
    await ledger.issue(id, 'p', now + 60_000, now);
    await ledger.openApproval(
      {
        id: randomUUID().replaceAll('-', ''),
        jti: randomUUID(),
        principal: 'p',
        view: '{}',
        expiresAtMs: now + 60_000,
      },
      now,
    );
    const before = schemaOf(path);
    // A read finds no head and leaves the file as it was.
    expect(await ledger.auditHead('/log/trail.jsonl')).toBeUndefined();
    expect(schemaOf(path)).toEqual(before);
    const head = { trail: 'A'.repeat(22), seq: 3, mac: 'B'.repeat(43) };
    await ledger.recordAuditHead('/log/trail.jsonl', head);
    const after = schemaOf(path);
    // Only the new table was added; every other object is as it was, its SQL text included.
    expect(after.filter((o) => !o.name.startsWith('mcp_confirm_audit_heads'))).toEqual(before);
    expect(after.filter((o) => o.name.startsWith('mcp_confirm_audit_heads')).map((o) => [o.type, o.name])).toEqual([
      ['table', 'mcp_confirm_audit_heads'],
    ]);
    expect(await ledger.spend(id, now + 1)).toBe('spent');
    await ledger.close();
    // Another connection (another process's view) reads the same head.
    const other = new SqliteLedger({ path });
    expect(await other.auditHead('/log/trail.jsonl')).toEqual(head);
    await other.close();
  });
});

describe('SqliteLedger grants and plans', () => {
  const schemaOf = (path: string): Array<{ type: string; name: string; sql: string | null }> => {
    const db = new Database(path, { readonly: true });
    try {
      return db.prepare('SELECT type, name, sql FROM sqlite_schema ORDER BY type, name').all() as Array<{
        type: string;
        name: string;
        sql: string | null;
      }>;
    } finally {
      db.close();
    }
  };
  const grant = (now: number) => ({
    id: recordId(),
    audience: 'files',
    principal: 'alice',
    tool: 'delete_file',
    scope: '{"path":"any"}',
    binding: '',
    summary: 'any file',
    policyDigest: slotKey(),
    approver: 'client',
    maxUses: 3,
    createdAtMs: now,
    expiresAtMs: now + 60_000,
  });
  const plan = (now: number) => ({
    id: recordId(),
    audience: 'files',
    principal: 'alice',
    binding: '',
    slots: [{ key: slotKey(), tool: 'delete_file', identity: '{}' }],
    approver: 'client',
    createdAtMs: now,
    expiresAtMs: now + 60_000,
  });

  it('keeps grants and plans in tables of their own (mcp_confirm_grants, mcp_confirm_plans, mcp_confirm_plan_slots), created on the first grant call; every other table stays exactly as it was', async () => {
    const path = freshPath();
    const ledger = new SqliteLedger({ path });
    const now = Date.now();
    const jti = randomUUID();
    await ledger.issue(jti, 'alice', now + 60_000, now);
    const before = schemaOf(path);
    const g = grant(now);
    expect(await ledger.spendGranting(jti, now, g)).toEqual({ spend: 'spent', created: 'created' });
    const after = schemaOf(path);
    const ours = (o: { name: string }): boolean =>
      /^(sqlite_autoindex_)?mcp_confirm_(grants|plans|plan_slots)(_|$)/.test(o.name);
    expect(after.filter((o) => !ours(o))).toEqual(before);
    expect(after.filter(ours).map((o) => [o.type, o.name])).toEqual([
      ['index', 'mcp_confirm_grants_ended'],
      ['index', 'mcp_confirm_grants_expiry'],
      ['index', 'mcp_confirm_grants_live_all'],
      ['index', 'mcp_confirm_grants_live_bound'],
      ['index', 'mcp_confirm_plan_slots_expiry'],
      ['index', 'mcp_confirm_plan_slots_key'],
      ['index', 'mcp_confirm_plans_bound'],
      ['index', 'mcp_confirm_plans_expiry'],
      ['index', 'sqlite_autoindex_mcp_confirm_grants_1'],
      ['index', 'sqlite_autoindex_mcp_confirm_plan_slots_1'],
      ['index', 'sqlite_autoindex_mcp_confirm_plans_1'],
      ['table', 'mcp_confirm_grants'],
      ['table', 'mcp_confirm_plan_slots'],
      ['table', 'mcp_confirm_plans'],
    ]);
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT id, principal, uses_left, revoked FROM mcp_confirm_grants').all()).toEqual([
      { id: g.id, principal: 'alice', uses_left: 2, revoked: 0 },
    ]);
    db.close();
    await ledger.close();
    // Another connection (another process's view) sees the grant and takes its uses.
    const other = new SqliteLedger({ path });
    expect(await other.takeGrantUse(g.id, now + 1)).toEqual({ taken: true, usesLeft: 1, expiresAtMs: g.expiresAtMs });
    await other.close();
  });

  it("gives a plans table made before plans had a binding its binding column (existing plans under the binding '', their slots still taken) and the bound indexes; bounds then count per principal and binding", async () => {
    const path = freshPath();
    const now = Date.now();
    // The grant and plan tables as the first grants release made them: no plans.binding, the per-principal indexes.
    const early = new SqliteLedger({ path, maxPlansPerPrincipal: 1 });
    const jti = randomUUID();
    await early.issue(jti, 'alice', now + 60_000, now);
    const old = plan(now);
    expect(await early.spendPlanning(jti, now, old)).toEqual({ spend: 'spent', created: 'created' });
    await early.close();
    const vandal = new Database(path);
    vandal.exec(`DROP INDEX mcp_confirm_plans_bound; DROP INDEX mcp_confirm_grants_live_bound;
      CREATE TABLE p (id TEXT NOT NULL PRIMARY KEY, audience TEXT NOT NULL, principal TEXT NOT NULL, approver TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL, slots INTEGER NOT NULL, slots_left INTEGER NOT NULL CHECK (slots_left >= 0));
      INSERT INTO p SELECT id, audience, principal, approver, created_at_ms, expires_at_ms, slots, slots_left FROM mcp_confirm_plans;
      DROP TABLE mcp_confirm_plans; ALTER TABLE p RENAME TO mcp_confirm_plans;
      CREATE INDEX mcp_confirm_plans_principal ON mcp_confirm_plans (principal, expires_at_ms);`);
    expect(
      vandal.prepare("SELECT count(*) AS n FROM pragma_table_info('mcp_confirm_plans') WHERE name = 'binding'").get(),
    ).toEqual({ n: 0 });
    vandal.close();
    const ledger = new SqliteLedger({ path, maxPlansPerPrincipal: 1 });
    const issued = async (): Promise<string> => {
      const j = randomUUID();
      await ledger.issue(j, 'alice', now + 60_000, now);
      return j;
    };
    // The old plan holds alice's place under the binding '': another there is full; under another binding it fits.
    expect(await ledger.spendPlanning(await issued(), now, plan(now))).toEqual({ spend: 'spent', created: 'full' });
    expect(await ledger.spendPlanning(await issued(), now, { ...plan(now), binding: '["proc-2",""]' })).toEqual({
      spend: 'spent',
      created: 'created',
    });
    expect(await ledger.takePlanSlot(old.slots[0]!.key, now + 1)).toMatchObject({ planId: old.id, slotsLeft: 0 });
    const names = schemaOf(path).map((o) => o.name);
    expect(names).toEqual(expect.arrayContaining(['mcp_confirm_plans_bound', 'mcp_confirm_grants_live_bound']));
    const db = new Database(path, { readonly: true });
    expect(
      db.prepare("SELECT count(*) AS n FROM pragma_table_info('mcp_confirm_plans') WHERE name = 'binding'").get(),
    ).toEqual({ n: 1 });
    db.close();
    await ledger.close();
  });

  it('enforces the grant bounds across ledgers sharing one file', async () => {
    const path = freshPath();
    const a = new SqliteLedger({ path, maxGrantsPerPrincipal: 1 });
    const b = new SqliteLedger({ path, maxGrantsPerPrincipal: 1 });
    const now = Date.now();
    const [j1, j2] = [randomUUID(), randomUUID()];
    await a.issue(j1, 'alice', now + 60_000, now);
    await a.issue(j2, 'alice', now + 60_000, now);
    expect(await a.spendGranting(j1, now, grant(now))).toEqual({ spend: 'spent', created: 'created' });
    expect(await b.spendGranting(j2, now, grant(now))).toEqual({ spend: 'spent', created: 'full' });
    await Promise.all([a.close(), b.close()]);
  });

  it('fails closed: every grant and plan method rejects with ERR_CONFIRM_LEDGER_UNAVAILABLE once their tables are gone (nothing spent) and after close', async () => {
    const path = freshPath();
    const ledger = new SqliteLedger({ path });
    const now = Date.now();
    const setup = randomUUID();
    await ledger.issue(setup, 'alice', now + 60_000, now);
    const g = grant(now);
    await ledger.spendGranting(setup, now, g);
    const vandal = new Database(path);
    vandal.exec('DROP TABLE mcp_confirm_grants; DROP TABLE mcp_confirm_plans; DROP TABLE mcp_confirm_plan_slots;');
    vandal.close();
    const jti = randomUUID();
    await ledger.issue(jti, 'alice', now + 60_000, now);
    expectUnavailable(await rejection(ledger.spendGranting(jti, now, grant(now))));
    expectUnavailable(await rejection(ledger.spendPlanning(jti, now, plan(now))));
    expectUnavailable(await rejection(ledger.findGrants({}, now)));
    expectUnavailable(await rejection(ledger.takeGrantUse(g.id, now)));
    expectUnavailable(await rejection(ledger.revokeGrant(g.id, now)));
    expectUnavailable(await rejection(ledger.takePlanSlot(slotKey(), now)));
    // The failed steps spent nothing: the confirmation is still outstanding.
    expect(await ledger.spend(jti, now + 1)).toBe('spent');
    await ledger.close();
    expectUnavailable(await rejection(ledger.findGrants({}, now)));
    expectUnavailable(await rejection(ledger.takeGrantUse(g.id, now)));
    expectUnavailable(await rejection(ledger.spendGranting(randomUUID(), now, grant(now))));
  });

  it('while another process holds the write lock, a grant take waits without blocking and is refused at its deadline, nothing taken; after the lock the use is there', async () => {
    const path = freshPath();
    const ledger = new SqliteLedger({ path, timeoutMs: 200 });
    const now = Date.now();
    const jti = randomUUID();
    await ledger.issue(jti, 'alice', now + 60_000, now);
    const g = grant(now);
    await ledger.spendGranting(jti, now, { ...g, maxUses: 2 });
    const other = randomUUID();
    await ledger.issue(other, 'alice', now + 60_000, now);
    const lock = await holdWriteLock(path);
    const events: string[] = [];
    try {
      const taking = rejection(ledger.takeGrantUse(g.id, now + 1)).then((e) => {
        events.push('take refused');
        return e;
      });
      const granting = rejection(ledger.spendGranting(other, now + 1, grant(now))).then((e) => {
        events.push('spendGranting refused');
        return e;
      });
      await timerTurn();
      events.push('timer');
      expectUnavailable(await taking);
      expectUnavailable(await granting);
    } finally {
      await lock.release();
    }
    expect(events[0]).toBe('timer');
    expect(await ledger.takeGrantUse(g.id, now + 2)).toEqual({ taken: true, usesLeft: 0, expiresAtMs: g.expiresAtMs });
    expect(await ledger.spend(other, now + 2)).toBe('spent');
    await ledger.close();
  });

  for (const kind of ['grant', 'plan'] as const) {
    it(`gives ${kind === 'grant' ? "a grant's last use" : 'one plan slot'} to exactly one of 4 processes x 250 concurrent takes, every round`, async () => {
      const path = freshPath();
      const creator = new SqliteLedger({ path });
      try {
        const rounds = await raceTakes({
          spec: { store: 'sqlite', path },
          creator,
          kind,
          processes: 4,
          attempts: 250,
          rounds: 5,
        });
        expect(rounds).toHaveLength(5);
        for (const r of rounds) {
          expect(r.errors).toEqual([]);
          expect(r.taken).toBe(1);
          expect(r.refused).toEqual(kind === 'grant' ? { exhausted: 999 } : { none: 999 });
        }
      } finally {
        await creator.close();
      }
    });
  }
});
