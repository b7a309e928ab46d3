/**
 * `mcp-confirm grants list|revoke`: the built CLI (`dist/cli/main.js`) as a real subprocess against
 * grants made directly through a store (a confirmation issued, then spent with `spendGranting`, as
 * the guard does): a temporary SQLite file, and once the Redis at `REDIS_URL`
 * (scripts/start-redis.sh; missing, the Redis tests fail). Needs `npm run build` first.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ConfirmStore } from '../../src/store/confirmStore.js';
import type { Grant, NewGrant } from '../../src/store/grantStore.js';
import { RedisLedger } from '../../src/store/redis.js';
import { SqliteLedger } from '../../src/store/sqlite.js';
import { runProcess, type Finished } from '../helpers/processes.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const GRANT_MS = 15 * 60_000;
const ISO = '\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z';

let R: string;
let db: string;
const stores: ConfirmStore[] = [];

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
});
beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-grants-')));
  db = join(R, 'ledger.db');
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close?.()));
  rmSync(R, { recursive: true, force: true });
});

function run(args: string[]): Promise<Finished> {
  return runProcess(process.execPath, [MAIN, ...args]);
}

function sqlite(path = db): SqliteLedger {
  const store = new SqliteLedger({ path });
  stores.push(store);
  return store;
}

function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url)
    throw new Error(
      'REDIS_URL is not set: start Redis with scripts/start-redis.sh and export REDIS_URL=redis://127.0.0.1:PORT',
    );
  return url;
}

/**
 * A grant made as the guard makes one: a confirmation issued for its principal, then spent with
 * `spendGranting` (created `ageMs` ago, so grants made in a row can be ordered; live for 15 minutes).
 */
async function granted(store: ConfirmStore, over: Partial<NewGrant> = {}, ageMs = 0): Promise<Grant> {
  const now = Date.now();
  const grant: NewGrant = {
    id: randomBytes(16).toString('base64url'),
    audience: 'files',
    principal: `tag-${randomBytes(8).toString('base64url')}`,
    tool: 'delete_file',
    scope: JSON.stringify({ path: { matcher: 'same-directory', dir: '/srv/cache', dev: 2049, ino: 131 } }),
    binding: '',
    summary: 'Or allow: delete any file directly in /srv/cache/ for 15 minutes, at most 20 files.',
    policyDigest: randomBytes(32).toString('base64url'),
    approver: 'client',
    maxUses: 20,
    createdAtMs: now - ageMs,
    expiresAtMs: now - ageMs + GRANT_MS,
    ...over,
  };
  const jti = randomUUID();
  await store.issue(jti, grant.principal, now + 300_000, now);
  expect(await store.spendGranting(jti, now, grant)).toEqual({ spend: 'spent', created: 'created' });
  return { ...grant, usesLeft: grant.maxUses - 1 };
}

/** The ids a `grants list` printed, in order (the first field of each line). */
const listedIds = (r: Finished): string[] =>
  r.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split('\t')[0]!);

/** A TCP port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('grants list (SQLite)', () => {
  it('prints the live grants oldest first, one line each with id, tool, principal tag, binding (over stdio the serving process), approver, uses, expiry, creation, audience and summary', async () => {
    const store = sqlite();
    // As the guard binds them: over HTTP no serving process; over stdio the serving process.
    const newer = await granted(store, { binding: '["",""]' }, 1_000);
    const stdio = 'pid 4242, started 2026-12-04T10:00:00.000Z, Ab3_xYz0-QwErTyUiOpAs';
    const older = await granted(store, { approver: 'ann', maxUses: 5, binding: JSON.stringify([stdio, '']) }, 2_000);
    const before = Date.now();
    const r = await run(['grants', 'list', '--ledger', `sqlite:${db}`]);
    const after = Date.now();
    expect(r.status).toBe(0);
    // The minutes left as the CLI counted them at some moment of its run (whole minutes, rounded down).
    const minutesLeft = /\(([0-9]+) minutes left\)/.exec(r.stdout)?.[1];
    expect(Number(minutesLeft)).toBeGreaterThanOrEqual(Math.floor((older.expiresAtMs - after) / 60_000));
    expect(Number(minutesLeft)).toBeLessThanOrEqual(Math.floor((older.expiresAtMs - before) / 60_000));
    expect(listedIds(r)).toEqual([older.id, newer.id]);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(
      new RegExp(
        `^${older.id}\\ttool \`delete_file\`\\tprincipal tag \`${older.principal}\`\\tbound to serving process \`${stdio}\`\\tapprover \`ann\`\\tuses left 4 of 5\\texpires ${ISO} \\(${minutesLeft} minutes left\\)\\tcreated ${ISO}\\taudience \`files\`\\tsummary \`Or allow: delete any file directly in /srv/cache/ for 15 minutes, at most 20 files\\.\`$`,
      ),
    );
    expect(lines[0]).toContain(`expires ${new Date(older.expiresAtMs).toISOString()}`);
    expect(lines[0]).toContain(`created ${new Date(older.createdAtMs).toISOString()}`);
    expect(lines[1]).toContain('uses left 19 of 20');
    expect(lines[1]).toContain('\tbound to any serving process\t');
    expect(lines[1]).toContain('approver `client`');
    expect(r.stderr).toBe('');
  });

  it('--json prints the Grant records as a JSON array that parses to exactly what the store holds', async () => {
    const store = sqlite();
    const b = await granted(store, {}, 1_000);
    const a = await granted(store, { summary: 'caf\u00e9 \u202Eevil\u202C', approver: 'z\u00fc' }, 2_000);
    const r = await run(['grants', 'list', '--ledger', `sqlite:${db}`, '--json']);
    expect(r.status).toBe(0);
    // ASCII only: a bidi control or any other non-ASCII character is a \u escape.
    expect(r.stdout).toMatch(/^[\x20-\x7e\n]*$/);
    expect(r.stdout).toContain('\\u202e');
    const parsed = JSON.parse(r.stdout) as Grant[];
    expect(parsed).toEqual([a, b]);
    expect(parsed).toEqual(await store.findGrants({}, Date.now()));
  });

  it('attack: a summary, approver or tool with line breaks, tabs or bidi controls cannot forge a line or a field; control: a plain one is shown as it is', async () => {
    const store = sqlite();
    const forged = `${randomBytes(16).toString('base64url')}\ttool \`rm\``;
    const attack = await granted(
      store,
      {
        summary: `ok\n${forged}\r\u2028\u202Egnp.exe`,
        approver: 'mallory\u2066\tapprover `ann`',
        tool: 'delete_file\u0085x',
        binding: JSON.stringify(['pid 1\tapprover `ann`\n', '']),
      },
      2_000,
    );
    const plain = await granted(store, {}, 1_000);
    const r = await run(['grants', 'list', '--ledger', `sqlite:${db}`]);
    expect(r.status).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(2);
    expect(listedIds(r)).toEqual([attack.id, plain.id]);
    expect(lines.map((l) => l.split('\t').length)).toEqual([10, 10]);
    expect(r.stdout).not.toMatch(/[\r\u2028\u2066\u202E\u0085]/);
    expect(lines[0]).toContain('\\n');
    expect(lines[0]).toContain('⟨U+202E⟩');
    expect(lines[0]).toContain('approver `mallory⟨U+2066⟩\\tapprover');
    expect(lines[0]).toContain('bound to serving process `pid 1\\tapprover ⟨U+0060⟩ann⟨U+0060⟩\\n`');
    // Control: a plain summary, whole and as it is.
    expect(lines[1]).toContain(`summary \`${plain.summary}\``);
  });

  it('a summary holding code spans keeps them readable (its backticks kept, fenced by a longer run); what is inside stays escaped and cannot close the fence or forge a field (control: a summary without backticks is a plain code span)', async () => {
    const store = sqlite();
    const spans = await granted(
      store,
      { summary: 'Or allow: delete any file directly in `/srv/cache/` for 15 minutes, at most 20 files.' },
      3_000,
    );
    const hostile = await granted(store, { summary: 'Or allow: `a\tb`` ``\n\u202Ex` end' }, 2_000);
    const plain = await granted(store, {}, 1_000);
    const r = await run(['grants', 'list', '--ledger', `sqlite:${db}`]);
    expect(r.status).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => l !== '');
    expect(listedIds(r)).toEqual([spans.id, hostile.id, plain.id]);
    expect(lines[0]).toMatch(
      /\tsummary `` Or allow: delete any file directly in `\/srv\/cache\/` for 15 minutes, at most 20 files\. ``$/,
    );
    expect(lines[0]).not.toContain('⟨U+0060⟩');
    // The longest run inside is two backticks: the fence is three; the tab, line break and bidi control are escapes.
    expect(lines[1]).toMatch(/\tsummary ``` Or allow: `a\\tb`` ``\\n⟨U\+202E⟩x` end ```$/);
    expect(lines.map((l) => l.split('\t').length)).toEqual([10, 10, 10]);
    expect(r.stdout).not.toMatch(/[\u202E]/);
    expect(lines[2]).toContain(`summary \`${plain.summary}\``);
  });

  it('--audience lists only the grants of that audience; control: without it, every audience', async () => {
    const store = sqlite();
    const files = await granted(store, { audience: 'files' }, 2_000);
    const other = await granted(store, { audience: 'other' }, 1_000);
    const only = await run(['grants', 'list', '--ledger', `sqlite:${db}`, '--audience', 'other']);
    expect(only.status).toBe(0);
    expect(listedIds(only)).toEqual([other.id]);
    const all = await run(['grants', 'list', '--ledger', `sqlite:${db}`]);
    expect(listedIds(all)).toEqual([files.id, other.id]);
  });

  it('says so when there are no live grants (exit 0); --json prints []; ended grants are not listed', async () => {
    const store = sqlite();
    await granted(store, { maxUses: 1 }); // created used up: ended at once
    const r = await run(['grants', 'list', '--ledger', `sqlite:${db}`]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`mcp-confirm: no live grants in the sqlite ledger at sqlite:${db}\n`);
    const json = await run(['grants', 'list', '--ledger', `sqlite:${db}`, '--json']);
    expect(json.status).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([]);
    // Control: a live one is listed.
    const live = await granted(store);
    expect(listedIds(await run(['grants', 'list', '--ledger', `sqlite:${db}`]))).toEqual([live.id]);
  });
});

describe('grants revoke (SQLite)', () => {
  it('revokes a grant: exit 0, no longer listed, no use can be taken; revoking it again is exit 1; control: the other grant stays live', async () => {
    const store = sqlite();
    const kept = await granted(store, {}, 2_000);
    const gone = await granted(store, {}, 1_000);
    const r = await run(['grants', 'revoke', gone.id, '--ledger', `sqlite:${db}`]);
    expect(r.status).toBe(0);
    expect(r.stderr).toBe(`mcp-confirm: revoked grant ${gone.id}\n`);
    expect(listedIds(await run(['grants', 'list', '--ledger', `sqlite:${db}`]))).toEqual([kept.id]);
    expect(await store.takeGrantUse(gone.id, Date.now())).toEqual({ taken: false, reason: 'revoked' });
    expect(await store.takeGrantUse(kept.id, Date.now())).toMatchObject({ taken: true, usesLeft: 18 });
    const again = await run(['grants', 'revoke', gone.id, '--ledger', `sqlite:${db}`]);
    expect(again.status).toBe(1);
    expect(again.stderr).toBe(
      `mcp-confirm: no live grant ${gone.id} (ended, revoked before, or never in this store)\n`,
    );
  });

  it('revokes a grant whose id starts with - (1 random id in 64 does), given as the first word after revoke or after --; control: the other dashed grant stays live until revoked', async () => {
    const store = sqlite();
    const first = await granted(store, { id: '-Ab3_xYz0-QwErTyUiOpAs' }, 2_000);
    const second = await granted(store, { id: '--b3_xYz0-QwErTyUiOpAs' }, 1_000);
    const r = await run(['grants', 'revoke', first.id, '--ledger', `sqlite:${db}`]);
    expect(r.stderr).toBe(`mcp-confirm: revoked grant ${first.id}\n`);
    expect(r.status).toBe(0);
    expect(listedIds(await run(['grants', 'list', '--ledger', `sqlite:${db}`]))).toEqual([second.id]);
    const after = await run(['grants', 'revoke', '--ledger', `sqlite:${db}`, '--', second.id]);
    expect(after.stderr).toBe(`mcp-confirm: revoked grant ${second.id}\n`);
    expect(after.status).toBe(0);
    expect(await store.takeGrantUse(second.id, Date.now())).toEqual({ taken: false, reason: 'revoked' });
  });

  it('an id never in the store is exit 1 with the same message', async () => {
    await granted(sqlite());
    const id = randomBytes(16).toString('base64url');
    const r = await run(['grants', 'revoke', id, '--ledger', `sqlite:${db}`]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`no live grant ${id} (ended, revoked before, or never in this store)`);
  });

  it('with --audience, a grant of another audience is not revoked (exit 1, still live); control: its own audience revokes it', async () => {
    const store = sqlite();
    const g = await granted(store, { audience: 'files' });
    const wrong = await run(['grants', 'revoke', g.id, '--ledger', `sqlite:${db}`, '--audience', 'other']);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain(`no live grant ${g.id} of audience \`other\``);
    expect(listedIds(await run(['grants', 'list', '--ledger', `sqlite:${db}`]))).toEqual([g.id]);
    const right = await run(['grants', 'revoke', g.id, '--ledger', `sqlite:${db}`, '--audience', 'files']);
    expect(right.status).toBe(0);
    expect(await store.findGrants({}, Date.now())).toEqual([]);
  });

  it.each([
    ['21 characters', 'A'.repeat(21)],
    ['23 characters', 'A'.repeat(23)],
    ['base64 (not url) characters', 'AAAAAAAAAAAAAAAAAAAA+/'],
    ['padding', 'AAAAAAAAAAAAAAAAAAAAA='],
    ['a bidi control', 'AAAAAAAAAAAAAAAAAAAAA\u202E'],
  ])('attack: an id of %s is a usage error (exit 2) naming it, and nothing is opened', async (_label, id) => {
    const missing = join(R, 'missing.db');
    const r = await run(['grants', 'revoke', id, '--ledger', `sqlite:${missing}`]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`grants revoke: ${JSON.stringify(id)} is not a grant id`);
    expect(existsSync(missing)).toBe(false);
    // Nothing opened: an unreachable Redis is not tried either (it would take seconds and say so).
    const redis = await run(['grants', 'revoke', id, '--ledger', `redis://127.0.0.1:${await closedPort()}/0`]);
    expect(redis.status).toBe(2);
    expect(redis.stderr).not.toContain('unavailable');
    // Control: a well-formed id goes to the store (an existing file; no such grant there: exit 1).
    sqlite();
    const control = await run(['grants', 'revoke', 'A'.repeat(22), '--ledger', `sqlite:${db}`]);
    expect(control.status).toBe(1);
    expect(control.stderr).toContain('no live grant AAAAAAAAAAAAAAAAAAAAAA');
  });
});

describe('grants: refusals before any store is opened', () => {
  it.each([
    ['list --ledger memory', ['grants', 'list', '--ledger', 'memory']],
    ['list without --ledger', ['grants', 'list']],
    ['revoke --ledger memory', ['grants', 'revoke', 'A'.repeat(22), '--ledger', 'memory']],
    ['revoke without --ledger', ['grants', 'revoke', 'A'.repeat(22)]],
  ])(
    '%s is a usage error (exit 2) explaining that a memory ledger’s grants end with the serving process; control: sqlite:PATH is taken',
    async (_label, argv) => {
      const r = await run(argv);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(
        "a memory ledger's grants live only inside the serving process and end with it, so there is nothing to list or revoke from outside",
      );
      expect(r.stdout).toBe('');
      sqlite();
      const control = await run([
        ...argv.filter((a) => a !== 'memory' && a !== '--ledger'),
        '--ledger',
        `sqlite:${db}`,
      ]);
      expect(control.status).toBe(argv[1] === 'list' ? 0 : 1);
    },
  );

  it('a missing SQLite file is exit 1 and is not created; a file that is not a database is exit 1; control: an existing ledger file lists', async () => {
    const missing = join(R, 'missing.db');
    const r = await run(['grants', 'list', '--ledger', `sqlite:${missing}`]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(
      `mcp-confirm: --ledger sqlite:${missing}: no such SQLite file (the store the servers share; it is not created here)\n`,
    );
    expect(existsSync(missing)).toBe(false);
    const junk = join(R, 'junk.db');
    writeFileSync(junk, 'not a database, just text that is long enough to have a header\n'.repeat(4));
    const bad = await run(['grants', 'list', '--ledger', `sqlite:${junk}`]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain(`cannot list grants: --ledger sqlite:${junk}: cannot open the SQLite ledger`);
    sqlite();
    expect((await run(['grants', 'list', '--ledger', `sqlite:${db}`])).status).toBe(0);
  });

  it('an unknown --ledger, a bad --audience, a flag of another command are usage errors (exit 2)', async () => {
    const cases: Array<[string[], string]> = [
      [['grants', 'list', '--ledger', 'mysql://x'], '--ledger: unknown ledger'],
      [['grants', 'list', '--ledger', 'sqlite:'], '--ledger sqlite:PATH needs a file path'],
      [['grants', 'list', '--ledger', 'redis://127.0.0.1:1/db'], 'the Redis database must be a number'],
      [['grants', 'list', '--ledger', `sqlite:${db}`, '--audience', 'a{b}'], '--audience must be 1 to 200'],
      [['grants', 'revoke', 'A'.repeat(22), '--ledger', `sqlite:${db}`, '--json'], '--json belongs to grants list'],
      [
        ['grants', 'list', '--ledger', `sqlite:${db}`, '--ttl', '5'],
        'grants list takes only --ledger, --audience and --json, not --ttl',
      ],
      [['grants', 'revoke', '--ledger', `sqlite:${db}`], 'grants revoke needs the grant ID'],
      [['grants', 'revoke', 'A'.repeat(22), 'B'.repeat(22), '--ledger', `sqlite:${db}`], 'unexpected argument'],
      [['--root', R, '--json'], '--json belongs to grants list'],
    ];
    for (const [argv, message] of cases) {
      const r = await run(argv);
      expect({ argv, status: r.status }).toEqual({ argv, status: 2 });
      expect(r.stderr).toContain(message);
    }
    expect(existsSync(db)).toBe(false);
  });

  it('grants --help prints the usage with the grants commands; a missing or unknown subcommand is exit 2 with a pointer to it', async () => {
    const help = await run(['grants', '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain(
      'mcp-confirm grants list --ledger sqlite:PATH|redis://HOST:PORT[/DB] [--audience NAME] [--json]',
    );
    expect(help.stdout).toContain(
      'mcp-confirm grants revoke ID --ledger sqlite:PATH|redis://HOST:PORT[/DB] [--audience NAME]',
    );
    const bare = await run(['grants']);
    expect(bare.status).toBe(2);
    expect(bare.stderr).toBe(
      "mcp-confirm: grants needs a command: grants list --ledger SPEC, or grants revoke ID --ledger SPEC\nRun 'mcp-confirm --help' for the usage.\n",
    );
    const unknown = await run(['grants', 'purge', '--ledger', `sqlite:${db}`]);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toBe(
      "mcp-confirm: unknown grants command: purge (grants takes list or revoke)\nRun 'mcp-confirm --help' for the usage.\n",
    );
  });
});

describe('grants list and revoke (Redis)', () => {
  it('lists a namespace’s grants (--audience), --json equal to the store’s, revokes one (then not listed, revoking again exit 1); control: another namespace does not show them', async () => {
    const url = redisUrl();
    const audience = `test-${randomUUID()}`;
    const store = await RedisLedger.open({ url, namespace: audience, connectTimeoutMs: 3_000 });
    stores.push(store);
    const a = await granted(store, { audience }, 2_000);
    const b = await granted(store, { audience, summary: 'two\nlines' }, 1_000);
    const list = await run(['grants', 'list', '--ledger', url, '--audience', audience]);
    expect(list.status).toBe(0);
    expect(listedIds(list)).toEqual([a.id, b.id]);
    expect(list.stdout).toContain('summary `two\\nlines`');
    const json = await run(['grants', 'list', '--ledger', url, '--audience', audience, '--json']);
    expect(JSON.parse(json.stdout)).toEqual([a, b]);
    // Control: the default namespace (mcp-confirm) is another one.
    const elsewhere = await run(['grants', 'list', '--ledger', url]);
    expect(elsewhere.status).toBe(0);
    expect(listedIds(elsewhere)).not.toContain(a.id);
    const revoked = await run(['grants', 'revoke', a.id, '--ledger', url, '--audience', audience]);
    expect(revoked.status).toBe(0);
    expect(revoked.stderr).toBe(`mcp-confirm: revoked grant ${a.id}\n`);
    expect(listedIds(await run(['grants', 'list', '--ledger', url, '--audience', audience]))).toEqual([b.id]);
    expect(await store.takeGrantUse(a.id, Date.now())).toEqual({ taken: false, reason: 'revoked' });
    const again = await run(['grants', 'revoke', a.id, '--ledger', url, '--audience', audience]);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain(`no live grant ${a.id} of audience`);
  });

  it('an unreachable Redis or one refusing the login is exit 1 with a clear message, never printing the password; control: the reachable one lists', async () => {
    const secret = `pw-${randomBytes(6).toString('hex')}`;
    const port = await closedPort();
    const down = await run(['grants', 'list', '--ledger', `redis://:${secret}@127.0.0.1:${port}/0`]);
    expect(down.status).toBe(1);
    expect(down.stderr).toContain(`cannot list grants: the redis ledger at redis://127.0.0.1:${port}/0 is unavailable`);
    expect(down.stdout + down.stderr).not.toContain(secret);
    const up = new URL(redisUrl());
    const refused = await run(['grants', 'list', '--ledger', `redis://nobody:${secret}@${up.host}/0`]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`Redis at redis://${up.host}/0 refused the connection`);
    expect(refused.stdout + refused.stderr).not.toContain(secret);
    const control = await run(['grants', 'list', '--ledger', `redis://${up.host}/0`]);
    expect(control.status).toBe(0);
  });
});
