/**
 * `mcp-confirm grants revoke ID --ledger … --audit PATH --key-file PATH` (the built CLI): the
 * revocation gets its `grant-revoked` line in a trail of its own under the servers' audit prefix,
 * which `audit verify` (with the same key file and ledger) finds intact. Each refusal with its
 * control; nothing is revoked when the trail cannot be written at all.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { NewGrant } from '../../src/store/grantStore.js';
import { SqliteLedger } from '../../src/store/sqlite.js';
import { runProcess, type Finished } from '../helpers/processes.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

let R: string;
let db: string;
let keyFile: string;
let logDir: string;
const stores: SqliteLedger[] = [];

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
});
beforeEach(async () => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-revoke-audit-')));
  db = join(R, 'ledger.db');
  keyFile = join(R, 'keys.json');
  writeFileSync(keyFile, (await run(['keygen', '--kid', 'k1'])).stdout, { mode: 0o600 });
  logDir = join(R, 'log');
  mkdirSync(logDir);
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  rmSync(R, { recursive: true, force: true });
});

function run(args: string[]): Promise<Finished> {
  return runProcess(process.execPath, [MAIN, ...args]);
}

/** A live grant in the SQLite ledger, made as the guard makes one (issued, then spent creating it). */
async function granted(): Promise<NewGrant> {
  const store = new SqliteLedger({ path: db });
  stores.push(store);
  const now = Date.now();
  const grant: NewGrant = {
    id: randomBytes(16).toString('base64url'),
    audience: 'files',
    principal: `tag-${randomBytes(8).toString('base64url')}`,
    tool: 'delete_file',
    scope: JSON.stringify({ arguments: {}, pin: null }),
    binding: '',
    summary: 'Or allow: delete any file directly in `/srv/cache/` for 15 minutes, at most 20 files.',
    policyDigest: randomBytes(32).toString('base64url'),
    approver: 'client',
    maxUses: 20,
    createdAtMs: now,
    expiresAtMs: now + 900_000,
  };
  const jti = randomUUID();
  await store.issue(jti, grant.principal, now + 300_000, now);
  expect(await store.spendGranting(jti, now, grant)).toEqual({ spend: 'spent', created: 'created' });
  return grant;
}

/** The trail files written under `logDir`. */
const trails = (): string[] => readdirSync(logDir).filter((f) => f.endsWith('.jsonl'));

/** The lines of one trail file, parsed. */
const linesOf = (file: string): Array<Record<string, unknown>> =>
  readFileSync(join(logDir, file), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

const listed = async (): Promise<string> => (await run(['grants', 'list', '--ledger', `sqlite:${db}`])).stdout;

describe('grants revoke --audit PATH --key-file PATH', () => {
  it('writes grant-revoked (grant, tool, principal tag, outcome command-line) to a trail that audit verify finds intact, its head in the shared ledger; control: without --audit no trail is written', async () => {
    const grant = await granted();
    const other = await granted();
    const prefix = join(logDir, 'trail');
    const r = await run([
      'grants',
      'revoke',
      grant.id,
      '--ledger',
      `sqlite:${db}`,
      '--audit',
      prefix,
      '--key-file',
      keyFile,
    ]);
    expect(r.status).toBe(0);
    expect(r.stderr).toContain(`revoked grant ${grant.id}`);
    expect(await listed()).not.toContain(grant.id);
    const [file, ...more] = trails();
    expect(more).toEqual([]);
    const lines = linesOf(file!);
    expect(lines.map((l) => l.event)).toEqual(['opened', 'grant-revoked', 'closed']);
    expect(lines[1]).toMatchObject({
      event: 'grant-revoked',
      grant: grant.id,
      tool: 'delete_file',
      principal: grant.principal,
      outcome: 'command-line',
      approver: null,
      jti: null,
    });
    const verified = await run([
      'audit',
      'verify',
      join(logDir, file!),
      '--key-file',
      keyFile,
      '--ledger',
      `sqlite:${db}`,
    ]);
    expect(verified.status).toBe(0);
    expect(verified.stdout.trim()).toBe('3');

    // Control: the same command without --audit revokes and writes nothing.
    const plain = await run(['grants', 'revoke', other.id, '--ledger', `sqlite:${db}`]);
    expect(plain.status).toBe(0);
    expect(trails()).toEqual([file]);
  });

  it('a grant that is not live: exit 1, and its trail has no grant-revoked line (still intact)', async () => {
    await granted();
    const r = await run([
      'grants',
      'revoke',
      'A'.repeat(22),
      '--ledger',
      `sqlite:${db}`,
      '--audit',
      join(logDir, 'trail'),
      '--key-file',
      keyFile,
    ]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`no live grant ${'A'.repeat(22)}`);
    const [file] = trails();
    expect(linesOf(file!).map((l) => l.event)).toEqual(['opened', 'closed']);
    expect((await run(['audit', 'verify', join(logDir, file!), '--key-file', keyFile])).status).toBe(0);
  });

  it('a trail that cannot be created is exit 2 and nothing is revoked (control: a writable prefix revokes)', async () => {
    const grant = await granted();
    const r = await run([
      'grants',
      'revoke',
      grant.id,
      '--ledger',
      `sqlite:${db}`,
      '--audit',
      join(R, 'no-such-dir', 'trail'),
      '--key-file',
      keyFile,
    ]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--audit: cannot create');
    expect(await listed()).toContain(grant.id);
    const fixed = await run([
      'grants',
      'revoke',
      grant.id,
      '--ledger',
      `sqlite:${db}`,
      '--audit',
      join(logDir, 'trail'),
      '--key-file',
      keyFile,
    ]);
    expect(fixed.status).toBe(0);
    expect(await listed()).not.toContain(grant.id);
  });

  it('--audit without --key-file, and --key-file without --audit, are usage errors (exit 2) before any store is opened, nothing revoked', async () => {
    const grant = await granted();
    const base = ['grants', 'revoke', grant.id, '--ledger', `sqlite:${db}`];
    const noKeys = await run([...base, '--audit', join(logDir, 'trail')]);
    expect(noKeys.status).toBe(2);
    expect(noKeys.stderr).toContain('--audit needs --key-file PATH');
    const noAudit = await run([...base, '--key-file', keyFile]);
    expect(noAudit.status).toBe(2);
    expect(noAudit.stderr).toContain('grants revoke takes --key-file only with --audit');
    expect(await listed()).toContain(grant.id);
    expect(trails()).toEqual([]);
  });
});
