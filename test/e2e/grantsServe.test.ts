/**
 * Grants and plans for `delete_file` through the built CLI (`dist/cli/main.js`) as a real
 * subprocess: over stdio with a real v2 `Client` pinned to 2026-07-28 on the SDK's stdio client
 * transport (and two stdio processes on one SQLite ledger: a grant or plan serves only the process
 * that gave it); over `--http` with bearer JWTs for two principals (case grant-3 of ../shared/cases,
 * with v2 clients and with 2025-era v1 clients answering in their elicitation form), and two
 * `--http` replicas sharing a key file and a ledger (SQLite, and the Redis at `REDIS_URL`:
 * scripts/start-redis.sh; missing, that test fails); the `--audit` trail's grant and plan lines,
 * checked by `mcp-confirm audit verify`; `/metrics`' counts of the grant and plan events; and the
 * usage errors of `--grants`, `--grant-max-uses`, `--grant-max-seconds`. Each attack with its
 * control. Needs `npm run build` first.
 */
import { randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAudited, linesOf, verifyTrail, type Line } from '../helpers/auditTrail.js';
import { PROCESS_DEADLINE_MS } from '../helpers/deadlines.js';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS, type Reply } from '../helpers/harness.js';
import { connectLegacy, connectModern, MAIN, startHttpServer, type HttpServerProcess } from '../helpers/httpServer.js';
import { InPlaceStdioTransport, runProcess, stderrSays, type Finished } from '../helpers/processes.js';

const GRANT_ACCEPT = { confirm: { action: 'accept', content: { confirmed: true, scope: 'grant' } } } as const;
const ISSUER = 'https://auth.example.test';
const ID = '[A-Za-z0-9_-]{22}';
const GRANT_FLAGS = ['--grants', 'same-directory', '--grant-max-uses', '3', '--plans'];

let R: string;
let root: string;
let keyFile: string;
let jwksPath: string;
let privateKey: CryptoKey;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  const pair = await generateKeyPair('RS256', { extractable: true });
  privateKey = pair.privateKey;
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-grants-jwks-')));
  jwksPath = join(dir, 'jwks.json');
  writeFileSync(
    jwksPath,
    JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] }),
  );
});
beforeEach(async () => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-grants-serve-')));
  root = join(R, 'root');
  mkdirSync(join(root, 'cache'), { recursive: true });
  mkdirSync(join(R, 'log'));
  for (let i = 0; i < 10; i++) writeFileSync(join(root, 'cache', `f${i}.tmp`), `cache ${i}`);
  writeFileSync(join(root, 'thesis.txt'), 'thesis');
  keyFile = join(R, 'keys.json');
  const keygen = await run(['keygen', '--kid', 'k1']);
  expect(keygen.status).toBe(0);
  writeFileSync(keyFile, keygen.stdout, { mode: 0o600 });
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  rmSync(R, { recursive: true, force: true });
});

function run(args: string[]): Promise<Finished> {
  return runProcess(process.execPath, [MAIN, ...args]);
}

const there = (p: string): boolean => existsSync(join(root, p));
const plan = (paths: string[]) => ({ calls: paths.map((path) => ({ tool: 'delete_file', arguments: { path } })) });

function resultText(reply: Reply): string {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply)}`);
  return reply.text;
}

/** The id a result names after `Granted (grant `, `Done under grant `, `Plan ` or `Done under plan `. */
function idIn(text: string, before: RegExp): string {
  const m = new RegExp(`${before.source}(${ID})`).exec(text);
  if (!m) throw new Error(`no id after ${String(before)} in ${JSON.stringify(text)}`);
  return m[1]!;
}

const call = (client: Client, path: string, extra: { requestState?: string; inputResponses?: unknown } = {}) =>
  callTool(client, { name: 'delete_file', arguments: { path }, ...extra });

/** Round 1 then round 2 with `answer`: the final reply. */
async function confirmWith(client: Client, path: string, answer: unknown): Promise<Reply> {
  const { state } = asked(await call(client, path));
  return call(client, path, { requestState: state, inputResponses: answer });
}

/** Asks for the plan of `paths` and approves it: the plan's id. */
async function approvePlan(client: Client, paths: string[]): Promise<string> {
  const first = asked(await callTool(client, { name: 'confirm_plan', arguments: plan(paths) }));
  expect(first.message).toMatch(new RegExp(`^Approve this plan of ${paths.length} calls\\?`));
  const approved = resultText(
    await callTool(client, {
      name: 'confirm_plan',
      arguments: plan(paths),
      requestState: first.state,
      inputResponses: ACCEPT,
    }),
  );
  expect(approved).toMatch(new RegExp(`^Plan ${ID} approved: make each of its ${paths.length} calls once`));
  return idIn(approved, /^Plan /);
}

/** Asserts the question of a call, and that nothing was deleted by it. */
function expectAsked(reply: Reply, path: string): void {
  expect(asked(reply).message).toContain('Permanently delete');
  expect(there(path), path).toBe(true);
}

/** Starts `mcp-confirm …args` over stdio, a real v2 client pinned to 2026-07-28 on the SDK's stdio transport. */
async function spawnStdio(args: string[]): Promise<{ client: Client; stderr: () => string }> {
  const transport = new InPlaceStdioTransport({ command: process.execPath, args: [MAIN, ...args], stderr: 'pipe' });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const client = new Client({ name: 'grants-stdio', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  cleanups.push(async () => {
    const pid = transport.pid;
    await client.close().catch(() => {});
    if (pid !== null) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already ended
      }
    }
  });
  return { client, stderr: () => err };
}

/** Starts `mcp-confirm --root … --http 127.0.0.1:0 …extra`, killed at the end of the test. */
async function serveHttp(extra: string[]): Promise<HttpServerProcess> {
  const server = await startHttpServer(['--root', root, '--http', '127.0.0.1:0', ...extra]);
  cleanups.push(async () => {
    if (server.proc.exitCode === null) server.proc.kill('SIGKILL');
    await server.exited;
  });
  return server;
}

/** A bearer JWT of ISSUER for `sub`, for the resource `audience`. */
function token(audience: string, sub: string): Promise<string> {
  const nowS = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope: 'mcp', client_id: 'notes-app' })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'at+jwt' })
    .setIssuer(ISSUER)
    .setAudience(audience)
    .setSubject(sub)
    .setIssuedAt(nowS - 5)
    .setExpirationTime(nowS + 3600)
    .sign(privateKey);
}

async function modern(url: URL, bearer?: string): Promise<Client> {
  const client = await connectModern(url, bearer);
  cleanups.push(() => client.close());
  return client;
}

describe('over stdio: mcp-confirm --root DIR --grants same-directory --grant-max-uses 3 --plans', () => {
  it('one question, then 2 more deletions in the directory under the grant; the 4th is asked and nothing more is deleted', async () => {
    const { client, stderr } = await spawnStdio(['--root', root, ...GRANT_FLAGS]);
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['confirm_plan', 'delete_file']);
    const first = asked(await call(client, 'cache/f0.tmp'));
    expect(first.message).toContain(`Or allow: delete any file directly in`);
    expect(first.message).toContain('at most 3 files; each is still re-checked before it is deleted.');
    const granted = resultText(
      await call(client, 'cache/f0.tmp', { requestState: first.state, inputResponses: GRANT_ACCEPT }),
    );
    expect(granted).toMatch(new RegExp(`Granted \\(grant ${ID}\\): 2 more calls like this one need no question`));
    const id = idIn(granted, /Granted \(grant /);
    expect(there('cache/f0.tmp')).toBe(false);
    for (const [i, left] of [
      [1, '1 more call and'],
      [2, 'no more calls: the grant is used up.'],
    ] as const) {
      const text = resultText(await call(client, `cache/f${i}.tmp`));
      expect(text).toContain(`Done under grant ${id} (no question asked): ${left}`);
      expect(there(`cache/f${i}.tmp`)).toBe(false);
    }
    expectAsked(await call(client, 'cache/f3.tmp'), 'cache/f3.tmp');
    await stderrSays(stderr, 'grants same-directory (at most 3 uses, 900s); plans (confirm_plan)');
  });

  it('attack: a call outside the granted directory is asked; control: one inside runs under the grant', async () => {
    const { client } = await spawnStdio(['--root', root, ...GRANT_FLAGS]);
    expect(resultText(await confirmWith(client, 'cache/f0.tmp', GRANT_ACCEPT))).toContain('Granted');
    expectAsked(await call(client, 'thesis.txt'), 'thesis.txt');
    expect(resultText(await call(client, 'cache/f1.tmp'))).toContain('Done under grant');
    expect(there('cache/f1.tmp')).toBe(false);
  });

  it('a form answer without scope approves that call only: the next is asked (control: scope "grant" then serves the next)', async () => {
    const { client } = await spawnStdio(['--root', root, ...GRANT_FLAGS]);
    expect(resultText(await confirmWith(client, 'cache/f0.tmp', ACCEPT))).not.toContain('Granted');
    expectAsked(await call(client, 'cache/f1.tmp'), 'cache/f1.tmp');
    expect(resultText(await confirmWith(client, 'cache/f1.tmp', GRANT_ACCEPT))).toContain('Granted');
    expect(resultText(await call(client, 'cache/f2.tmp'))).toContain('Done under grant');
  });

  it('where a plan slot and a grant both match, the plan slot is taken and the grant keeps its use (control: the next call in the directory takes the grant)', async () => {
    const { client } = await spawnStdio(['--root', root, ...GRANT_FLAGS]);
    const grantId = idIn(resultText(await confirmWith(client, 'cache/f0.tmp', GRANT_ACCEPT)), /Granted \(grant /);
    const planId = await approvePlan(client, ['cache/f1.tmp', 'cache/f2.tmp']);
    expect(resultText(await call(client, 'cache/f1.tmp'))).toContain(`Done under plan ${planId}`);
    expect(resultText(await call(client, 'cache/f3.tmp'))).toContain(
      `Done under grant ${grantId} (no question asked): 1 more call`,
    );
  });

  it('attack: a planned file replaced before its call is refused and kept (ERR_CONFIRM_CHANGED or GONE); control: the unchanged one runs under the plan', async () => {
    const { client } = await spawnStdio(['--root', root, ...GRANT_FLAGS]);
    await approvePlan(client, ['thesis.txt', 'cache/f1.tmp']);
    rmSync(join(root, 'thesis.txt'));
    writeFileSync(join(root, 'thesis.txt'), 'another thesis, longer');
    const changed = await call(client, 'thesis.txt');
    expect(changed.kind === 'result' && changed.isError).toBe(true);
    expect(resultText(changed)).toMatch(/ERR_CONFIRM_(CHANGED|GONE)/);
    expect(readFileSync(join(root, 'thesis.txt'), 'utf8')).toBe('another thesis, longer');
    expect(resultText(await call(client, 'cache/f1.tmp'))).toContain('Done under plan');
    expect(there('cache/f1.tmp')).toBe(false);
  });

  it('a plan of 2 approved once with confirm_plan: both run without a question; a third call and a used slot are asked', async () => {
    const { client } = await spawnStdio(['--root', root, ...GRANT_FLAGS]);
    const paths = ['cache/f0.tmp', 'thesis.txt'];
    const id = await approvePlan(client, paths);
    for (const p of paths) expect(there(p), p).toBe(true); // approving does nothing
    for (const [i, p] of paths.entries()) {
      const text = resultText(await call(client, p));
      expect(text).toContain(
        `Done under plan ${id}, approved before (no question asked): ${i === 0 ? '1 of its calls left' : 'none of its calls left'}.`,
      );
      expect(there(p), p).toBe(false);
    }
    expectAsked(await call(client, 'cache/f1.tmp'), 'cache/f1.tmp');
    writeFileSync(join(root, 'thesis.txt'), 'thesis again');
    expectAsked(await call(client, 'thesis.txt'), 'thesis.txt');
  });

  it('attack: a symbolic link put in the granted directory (to a file outside it, or to a directory for a subtree grant) is refused, its target kept; control: a regular file runs under the grant', async () => {
    mkdirSync(join(root, 'docs'));
    writeFileSync(join(root, 'docs', 'x'), 'docs');
    const { client } = await spawnStdio(['--root', root, '--grants', 'subtree', '--grant-max-uses', '5']);
    expect(resultText(await confirmWith(client, 'cache/f0.tmp', GRANT_ACCEPT))).toContain('Granted');
    symlinkSync(join(root, 'thesis.txt'), join(root, 'cache', 'link'));
    symlinkSync(join(root, 'docs'), join(root, 'cache', 'docs'));
    for (const path of ['cache/link', 'cache/docs/x']) {
      const reply = await call(client, path);
      expect(reply.kind === 'result' && reply.isError, path).toBe(true);
      expect(resultText(reply), path).toMatch(/^\[ERR_CONFIRM_SYMLINK\]/);
    }
    expect(readFileSync(join(root, 'thesis.txt'), 'utf8')).toBe('thesis');
    expect(readFileSync(join(root, 'docs', 'x'), 'utf8')).toBe('docs');
    expect(resultText(await call(client, 'cache/f1.tmp'))).toContain('Done under grant');
    expect(there('cache/f1.tmp')).toBe(false);
  });

  it('grant-2: the granted directory swapped for another of the same name is asked, nothing in either touched; control: before the swap, it runs', async () => {
    const { client } = await spawnStdio(['--root', root, ...GRANT_FLAGS]);
    expect(resultText(await confirmWith(client, 'cache/f0.tmp', GRANT_ACCEPT))).toContain('Granted');
    expect(resultText(await call(client, 'cache/f1.tmp'))).toContain('Done under grant');
    renameSync(join(root, 'cache'), join(root, 'cache.old'));
    mkdirSync(join(root, 'cache'));
    writeFileSync(join(root, 'cache', 'f2.tmp'), 'new');
    expectAsked(await call(client, 'cache/f2.tmp'), 'cache/f2.tmp');
    expect(there('cache.old/f2.tmp')).toBe(true);
  });

  it('a grant of --grant-max-seconds 1 is not used once that second is over (asked); control: a grant of 900 s is used after the same wait', async () => {
    const short = await spawnStdio(['--root', root, '--grants', 'same-directory', '--grant-max-seconds', '1']);
    const first = asked(await call(short.client, 'cache/f0.tmp'));
    expect(first.message).toContain('for 1 second, at most 20 files');
    expect(
      resultText(await call(short.client, 'cache/f0.tmp', { requestState: first.state, inputResponses: GRANT_ACCEPT })),
    ).toContain('Granted');
    const long = await spawnStdio(['--root', root, '--grants', 'same-directory', '--grant-max-seconds', '900']);
    expect(resultText(await confirmWith(long.client, 'cache/f5.tmp', GRANT_ACCEPT))).toContain('Granted');
    // The grant's end is counted from its approval, which came before its result: a wait of more
    // than a second after the result is past it, however slow the machine.
    await new Promise((r) => setTimeout(r, 1_100));
    expectAsked(await call(short.client, 'cache/f1.tmp'), 'cache/f1.tmp');
    expect(resultText(await call(long.client, 'cache/f6.tmp'))).toContain('Done under grant');
  });

  it('--grant-max-uses 1 is exit 2 naming it: a grant of one use would allow nothing more (control: 2 offers "at most 2 files" and covers one more deletion, the third asked)', async () => {
    const refused = await run(['--root', root, '--grants', 'same-directory', '--grant-max-uses', '1']);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(
      `mcp-confirm: --grant-max-uses must be at least 2, got "1" (the approving deletion is a grant's first use, so a grant of 1 would allow no other deletion)`,
    );
    const { client } = await spawnStdio(['--root', root, '--grants', 'same-directory', '--grant-max-uses', '2']);
    const first = asked(await call(client, 'cache/f0.tmp'));
    expect(first.message).toContain('for 15 minutes, at most 2 files; each is still re-checked before it is deleted.');
    expect(
      resultText(await call(client, 'cache/f0.tmp', { requestState: first.state, inputResponses: GRANT_ACCEPT })),
    ).toContain('Granted');
    expect(resultText(await call(client, 'cache/f1.tmp'))).toContain('Done under grant');
    expectAsked(await call(client, 'cache/f2.tmp'), 'cache/f2.tmp');
  });

  it('without --grants and --plans, no grant is offered and confirm_plan is not listed (control of the flags)', async () => {
    const { client } = await spawnStdio(['--root', root]);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['delete_file']);
    const first = asked(await call(client, 'cache/f0.tmp'));
    expect(first.message).not.toContain('Or allow');
    expect(
      resultText(await call(client, 'cache/f0.tmp', { requestState: first.state, inputResponses: GRANT_ACCEPT })),
    ).not.toContain('Granted');
    expectAsked(await call(client, 'cache/f1.tmp'), 'cache/f1.tmp');
  });
});

describe('over stdio: two processes sharing --ledger sqlite:PATH and --key-file', () => {
  it('attack: a grant given by process A is not used by process B (asked there, nothing deleted); control: A uses it', async () => {
    const args = ['--root', root, '--key-file', keyFile, '--ledger', `sqlite:${join(R, 'ledger.db')}`, ...GRANT_FLAGS];
    const a = await spawnStdio(args);
    const b = await spawnStdio(args);
    expect(resultText(await confirmWith(a.client, 'cache/f0.tmp', GRANT_ACCEPT))).toContain('Granted');
    expectAsked(await call(b.client, 'cache/f1.tmp'), 'cache/f1.tmp');
    expect(resultText(await call(a.client, 'cache/f1.tmp'))).toContain('Done under grant');
    expect(there('cache/f1.tmp')).toBe(false);
  });

  it('attack: a plan approved in process A is not used by process B; control: A uses it', async () => {
    const args = ['--root', root, '--key-file', keyFile, '--ledger', `sqlite:${join(R, 'ledger.db')}`, ...GRANT_FLAGS];
    const a = await spawnStdio(args);
    const b = await spawnStdio(args);
    await approvePlan(a.client, ['cache/f0.tmp', 'cache/f1.tmp']);
    expectAsked(await call(b.client, 'cache/f0.tmp'), 'cache/f0.tmp');
    expect(resultText(await call(a.client, 'cache/f0.tmp'))).toContain('Done under plan');
    expect(there('cache/f0.tmp')).toBe(false);
  });
});

describe('over --http with bearer tokens for two principals', () => {
  it("grant-3: U2's call in the directory of U1's grant is asked, nothing deleted; control: U1's call runs under it", async () => {
    const server = await serveHttp(['--auth-issuer', ISSUER, '--auth-jwks', jwksPath, ...GRANT_FLAGS]);
    const u1 = await modern(server.url, await token(server.url.href, 'u1'));
    const u2 = await modern(server.url, await token(server.url.href, 'u2'));
    expect(resultText(await confirmWith(u1, 'cache/f0.tmp', GRANT_ACCEPT))).toMatch(/Granted \(grant /);
    expectAsked(await call(u2, 'cache/f1.tmp'), 'cache/f1.tmp');
    expect(resultText(await call(u1, 'cache/f1.tmp'))).toContain('Done under grant');
    expect(there('cache/f1.tmp')).toBe(false);
  });

  it("a plan of U1 is not U2's: U2's call of a planned file is asked; control: U1's runs under the plan", async () => {
    const server = await serveHttp(['--auth-issuer', ISSUER, '--auth-jwks', jwksPath, ...GRANT_FLAGS]);
    const u1 = await modern(server.url, await token(server.url.href, 'u1'));
    const u2 = await modern(server.url, await token(server.url.href, 'u2'));
    await approvePlan(u1, ['cache/f0.tmp', 'cache/f1.tmp']);
    expectAsked(await call(u2, 'cache/f0.tmp'), 'cache/f0.tmp');
    expect(resultText(await call(u1, 'cache/f0.tmp'))).toContain('Done under plan');
    expect(there('cache/f0.tmp')).toBe(false);
  });
});

describe('over --http, 2025-era clients with bearer tokens for two principals', () => {
  it("grant-3 with v1 clients: U1 grants through its elicitation form; U2's call in the directory is asked (declined, nothing deleted); control: U1's next runs with no elicitation", async () => {
    const server = await serveHttp(['--auth-issuer', ISSUER, '--auth-jwks', jwksPath, ...GRANT_FLAGS]);
    const u1 = await connectLegacy(
      server.url,
      async () => ({ action: 'accept', content: { confirmed: true, scope: 'grant' } }),
      await token(server.url.href, 'u1'),
    );
    cleanups.push(() => u1.client.close());
    const u2 = await connectLegacy(server.url, async () => ({ action: 'decline' }), await token(server.url.href, 'u2'));
    cleanups.push(() => u2.client.close());
    const v1Call = async (client: typeof u1.client, path: string): Promise<string> => {
      const r = (await client.callTool({ name: 'delete_file', arguments: { path } })) as {
        content: Array<{ text?: string }>;
      };
      return r.content.map((c) => c.text ?? '').join(' ');
    };
    expect(await v1Call(u1.client, 'cache/f0.tmp')).toMatch(new RegExp(`Granted \\(grant ${ID}\\)`));
    expect(u1.asked).toHaveLength(1);
    expect(u1.asked[0]).toContain('Or allow: delete any file directly in');
    expect(await v1Call(u2.client, 'cache/f1.tmp')).toContain('declined');
    expect(u2.asked).toHaveLength(1);
    expect(there('cache/f1.tmp')).toBe(true);
    expect(await v1Call(u1.client, 'cache/f1.tmp')).toContain('Done under grant');
    expect(u1.asked).toHaveLength(1);
    expect(there('cache/f1.tmp')).toBe(false);
  });
});

describe('mcp-confirm grants list|revoke against a serving --http process on the same SQLite ledger', () => {
  it('lists the grant the server created (the id its result printed); after grants revoke, the server asks (control: before, it runs under it)', async () => {
    const ledger = `sqlite:${join(R, 'ledger.db')}`;
    const server = await serveHttp(['--ledger', ledger, '--key-file', keyFile, ...GRANT_FLAGS]);
    const client = await modern(server.url);
    const none = await run(['grants', 'list', '--ledger', ledger]);
    expect(none.status).toBe(0);
    expect(none.stdout).toBe('');
    const id = idIn(resultText(await confirmWith(client, 'cache/f0.tmp', GRANT_ACCEPT)), /Granted \(grant /);
    const listed = await run(['grants', 'list', '--ledger', ledger]);
    expect(listed.status).toBe(0);
    const lines = listed.stdout.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.split('\t')[0]).toBe(id);
    expect(lines[0]).toContain('uses left 2 of 3');
    expect(lines[0]).toContain('approver `client`');
    expect(resultText(await call(client, 'cache/f1.tmp'))).toContain(`Done under grant ${id}`);
    expect((await run(['grants', 'list', '--ledger', ledger])).stdout).toContain('uses left 1 of 3');
    const revoked = await run(['grants', 'revoke', id, '--ledger', ledger]);
    expect(revoked.status).toBe(0);
    expect(revoked.stderr).toBe(`mcp-confirm: revoked grant ${id}\n`);
    expectAsked(await call(client, 'cache/f2.tmp'), 'cache/f2.tmp');
    expect((await run(['grants', 'list', '--ledger', ledger])).stdout).toBe('');
  });
});

describe('two --http replicas sharing --key-file and --ledger (no process binding over HTTP)', () => {
  /**
   * Round 1 until it asks: a Redis ledger connects in the background and refuses with
   * ERR_CONFIRM_LEDGER_UNAVAILABLE until then (every refusal meanwhile must be exactly that).
   */
  async function askWhenReady(client: Client, path: string): Promise<{ state: string }> {
    const until = Date.now() + PROCESS_DEADLINE_MS;
    for (;;) {
      const reply = await call(client, path);
      if (reply.kind === 'input_required') return asked(reply);
      expect(resultText(reply)).toMatch(/^\[ERR_CONFIRM_LEDGER_UNAVAILABLE\]/);
      if (Date.now() > until) throw new Error(`the ledger was still unavailable after ${PROCESS_DEADLINE_MS} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The Redis the test runner started (scripts/start-redis.sh): missing is a failure, never a skip. */
  function redisUrl(): string {
    const url = process.env.REDIS_URL;
    if (!url)
      throw new Error(
        'REDIS_URL is not set: start Redis with scripts/start-redis.sh and export REDIS_URL=redis://127.0.0.1:PORT',
      );
    return url;
  }

  /** One resource URL for both replicas (as behind a balancer): one token audience, one principal per subject. */
  const RESOURCE = 'http://replicas.example.test/mcp';

  /** Two `--http` replicas with tokens, the key file and `ledger` (each test its own audience), started together. */
  async function replicas(
    ledger: string,
    flags: string[] = GRANT_FLAGS,
  ): Promise<[HttpServerProcess, HttpServerProcess]> {
    const common = [
      '--auth-issuer',
      ISSUER,
      '--auth-jwks',
      jwksPath,
      '--resource',
      RESOURCE,
      '--key-file',
      keyFile,
      '--ledger',
      ledger,
      '--audience',
      `grants-${randomUUID()}`,
      ...flags,
    ];
    const [a, b] = await Promise.all([serveHttp(common), serveHttp(common)]);
    return [a, b];
  }

  async function grantOnAUsedOnB(ledger: string): Promise<void> {
    const resource = RESOURCE;
    const [a, b] = await replicas(ledger);
    const u1 = await token(resource, 'u1');
    const u1a = await modern(a.url, u1);
    const u1b = await modern(b.url, u1);
    const u2b = await modern(b.url, await token(resource, 'u2'));
    const { state } = await askWhenReady(u1a, 'cache/f0.tmp');
    const granted = resultText(await call(u1a, 'cache/f0.tmp', { requestState: state, inputResponses: GRANT_ACCEPT }));
    const id = idIn(granted, /Granted \(grant /);
    // Attack: another principal on replica B is asked.
    await askWhenReady(u2b, 'cache/f1.tmp');
    expect(there('cache/f1.tmp')).toBe(true);
    // The same principal on replica B uses the grant given on A, then the last use on A again.
    expect(resultText(await call(u1b, 'cache/f1.tmp'))).toContain(
      `Done under grant ${id} (no question asked): 1 more call`,
    );
    expect(there('cache/f1.tmp')).toBe(false);
    expect(resultText(await call(u1a, 'cache/f2.tmp'))).toContain(
      `Done under grant ${id} (no question asked): no more calls: the grant is used up.`,
    );
    // Used up across both replicas: the next is asked on either.
    expectAsked(await call(u1b, 'cache/f3.tmp'), 'cache/f3.tmp');
    expectAsked(await call(u1a, 'cache/f3.tmp'), 'cache/f3.tmp');
    // A plan approved on B serves U1 on A and on B, each call once; not U2.
    const planId = await approvePlan(u1b, ['cache/f4.tmp', 'cache/f5.tmp']);
    expectAsked(await call(u2b, 'cache/f4.tmp'), 'cache/f4.tmp');
    expect(resultText(await call(u1a, 'cache/f4.tmp'))).toContain(`Done under plan ${planId}`);
    expect(resultText(await call(u1b, 'cache/f5.tmp'))).toContain(`Done under plan ${planId}`);
    for (const p of ['cache/f4.tmp', 'cache/f5.tmp']) expect(there(p), p).toBe(false);
    writeFileSync(join(root, 'cache', 'f4.tmp'), 'again');
    expectAsked(await call(u1b, 'cache/f4.tmp'), 'cache/f4.tmp');
  }

  it('sqlite: a grant given on replica A is used on replica B by the same principal, never by another; its uses are counted across both', async () => {
    await grantOnAUsedOnB(`sqlite:${join(R, 'ledger.db')}`);
  });

  it('redis: a grant given on replica A is used on replica B by the same principal, never by another; its uses are counted across both', async () => {
    await grantOnAUsedOnB(redisUrl());
  });

  it('a grant a 2025-era v1 client of U1 gives on replica A serves a 2026-07-28 client of U1 on replica B (sqlite); control: U2 on B is asked', async () => {
    const [a, b] = await replicas(`sqlite:${join(R, 'ledger.db')}`);
    const u1 = await token(RESOURCE, 'u1');
    const legacy = await connectLegacy(
      a.url,
      async () => ({ action: 'accept', content: { confirmed: true, scope: 'grant' } }),
      u1,
    );
    cleanups.push(() => legacy.client.close());
    const r = (await legacy.client.callTool({ name: 'delete_file', arguments: { path: 'cache/f0.tmp' } })) as {
      content: Array<{ text?: string }>;
    };
    const id = idIn(r.content.map((c) => c.text ?? '').join(' '), /Granted \(grant /);
    expect(legacy.asked).toHaveLength(1);
    expectAsked(await call(await modern(b.url, await token(RESOURCE, 'u2')), 'cache/f1.tmp'), 'cache/f1.tmp');
    expect(resultText(await call(await modern(b.url, u1), 'cache/f1.tmp'))).toContain(`Done under grant ${id}`);
    expect(there('cache/f1.tmp')).toBe(false);
  });

  it.each([
    ['sqlite', () => `sqlite:${join(R, 'ledger.db')}`],
    ['redis', redisUrl],
  ])(
    'grant-4 across replicas (%s): the last use of a grant, 16 calls at once spread over A and B: exactly one runs under it, 15 are asked',
    async (_kind, ledger) => {
      const [a, b] = await replicas(ledger(), ['--grants', 'same-directory', '--grant-max-uses', '2']);
      const u1 = await token(RESOURCE, 'u1');
      const [u1a, u1b] = [await modern(a.url, u1), await modern(b.url, u1)];
      const { state } = await askWhenReady(u1a, 'cache/f0.tmp');
      expect(
        resultText(await call(u1a, 'cache/f0.tmp', { requestState: state, inputResponses: GRANT_ACCEPT })),
      ).toContain('Granted');
      for (let i = 10; i < 26; i++) writeFileSync(join(root, 'cache', `f${i}.tmp`), `cache ${i}`);
      const replies = await Promise.all(
        Array.from({ length: 16 }, (_, i) => call(i % 2 === 0 ? u1a : u1b, `cache/f${i + 10}.tmp`)),
      );
      const done = replies.filter((r) => r.kind === 'result' && r.text.includes('Done under grant'));
      const askedReplies = replies.filter((r) => r.kind === 'input_required');
      expect(done).toHaveLength(1);
      expect(askedReplies).toHaveLength(15);
      const gone = Array.from({ length: 16 }, (_, i) => `cache/f${i + 10}.tmp`).filter((p) => !there(p));
      expect(gone).toHaveLength(1);
    },
  );

  it.each([
    ['sqlite', () => `sqlite:${join(R, 'ledger.db')}`],
    ['redis', redisUrl],
  ])(
    'one plan slot, 16 identical calls at once spread over replicas A and B (%s): exactly one runs under the plan, the others are asked or find the file gone',
    async (_kind, ledger) => {
      const [a, b] = await replicas(ledger(), ['--plans']);
      const u1 = await token(RESOURCE, 'u1');
      const [u1a, u1b] = [await modern(a.url, u1), await modern(b.url, u1)];
      await askWhenReady(u1b, 'thesis.txt'); // both ledgers connected
      await askWhenReady(u1a, 'thesis.txt');
      const planId = await approvePlan(u1a, ['cache/f0.tmp', 'cache/f1.tmp']);
      const replies = await Promise.all(
        Array.from({ length: 16 }, (_, i) => call(i % 2 === 0 ? u1a : u1b, 'cache/f0.tmp')),
      );
      const done = replies.filter((r) => r.kind === 'result' && !r.isError);
      expect(done).toHaveLength(1);
      expect(resultText(done[0]!)).toContain(`Done under plan ${planId}`);
      for (const r of replies.filter((x) => x !== done[0])) {
        if (r.kind === 'input_required') expect(asked(r).message).toContain('Permanently delete');
        else expect(resultText(r)).toMatch(/^\[ERR_CONFIRM_GONE\]/);
      }
      expect(there('cache/f0.tmp')).toBe(false);
      // Control: the plan's other slot is still there, once.
      expect(resultText(await call(u1b, 'cache/f1.tmp'))).toContain(`Done under plan ${planId}`);
    },
  );

  it('control: with the default memory ledger, a grant given on replica A is not known on replica B (asked there), and serves on A', async () => {
    const resource = 'http://replicas.example.test/mcp';
    const common = [
      '--auth-issuer',
      ISSUER,
      '--auth-jwks',
      jwksPath,
      '--resource',
      resource,
      '--key-file',
      keyFile,
      ...GRANT_FLAGS,
    ];
    const [a, b] = await Promise.all([serveHttp(common), serveHttp(common)]);
    const u1 = await token(resource, 'u1');
    const u1a = await modern(a.url, u1);
    const u1b = await modern(b.url, u1);
    expect(resultText(await confirmWith(u1a, 'cache/f0.tmp', GRANT_ACCEPT))).toContain('Granted');
    expectAsked(await call(u1b, 'cache/f1.tmp'), 'cache/f1.tmp');
    expect(resultText(await call(u1a, 'cache/f1.tmp'))).toContain('Done under grant');
  });
});

describe('--audit: the grant and plan lines', () => {
  const events = (lines: Line[]) => lines.map((l) => l['event']);

  it('writes granted, acted-under-grant (grant = the id in the result), grant-exhausted on the last use, plan-approved and acted-under-plan (grant = the plan id); audit verify says intact after the server stops', async () => {
    const served = await startAudited(
      ['--root', root, '--key-file', keyFile, '--audit', join(R, 'log', 'trail'), ...GRANT_FLAGS],
      cleanups,
    );
    const { client, trail } = served;
    const grantId = idIn(resultText(await confirmWith(client, 'cache/f0.tmp', GRANT_ACCEPT)), /Granted \(grant /);
    for (const i of [1, 2])
      expect(idIn(resultText(await call(client, `cache/f${i}.tmp`)), /Done under grant /)).toBe(grantId);
    const asked4 = await call(client, 'cache/f3.tmp');
    expectAsked(asked4, 'cache/f3.tmp');
    const planId = await approvePlan(client, ['cache/f4.tmp', 'cache/f5.tmp']);
    for (const p of ['cache/f4.tmp', 'cache/f5.tmp'])
      expect(idIn(resultText(await call(client, p)), /Done under plan /)).toBe(planId);
    expect((await served.endInput()).code).toBe(0);

    const lines = linesOf(trail);
    expect(events(lines)).toEqual([
      'opened',
      'asked',
      'confirmed',
      'granted',
      'acted',
      'acted-under-grant',
      'acted',
      'acted-under-grant',
      'grant-exhausted',
      'acted',
      'asked',
      'asked',
      'confirmed',
      'plan-approved',
      'acted-under-plan',
      'acted',
      'acted-under-plan',
      'acted',
      'closed',
    ]);
    const of = (event: string) => lines.filter((l) => l['event'] === event);
    expect(of('granted').map((l) => l['grant'])).toEqual([grantId]);
    expect(String(of('granted')[0]!['outcome'])).toContain('Or allow: delete any file directly in');
    expect(of('acted-under-grant').map((l) => [l['grant'], l['outcome']])).toEqual([
      [grantId, '1 left'],
      [grantId, '0 left'],
    ]);
    expect(of('grant-exhausted').map((l) => l['grant'])).toEqual([grantId]);
    expect(of('plan-approved').map((l) => [l['grant'], l['outcome']])).toEqual([[planId, '2 calls']]);
    expect(of('acted-under-plan').map((l) => [l['grant'], l['outcome']])).toEqual([
      [planId, '1 left'],
      [planId, '0 left'],
    ]);
    // Only the grant and plan lines carry a grant field.
    const withGrant = ['granted', 'acted-under-grant', 'grant-exhausted', 'plan-approved', 'acted-under-plan'];
    for (const l of lines) expect('grant' in l, String(l['event'])).toBe(withGrant.includes(String(l['event'])));

    const verified = await verifyTrail(trail, keyFile);
    expect(verified.status).toBe(0);
    expect(verified.stdout).toBe(`${lines.length}\n`);
  });

  it('attack: a grant id changed in an acted-under-grant line breaks the chain (audit verify exits 3 naming that line); control: the trail as written is intact', async () => {
    const served = await startAudited(
      ['--root', root, '--key-file', keyFile, '--audit', join(R, 'log', 'trail'), ...GRANT_FLAGS],
      cleanups,
    );
    const grantId = idIn(
      resultText(await confirmWith(served.client, 'cache/f0.tmp', GRANT_ACCEPT)),
      /Granted \(grant /,
    );
    expect(resultText(await call(served.client, 'cache/f1.tmp'))).toContain('Done under grant');
    await served.endInput();
    const control = await verifyTrail(served.trail, keyFile);
    expect(control.status).toBe(0);
    const text = readFileSync(served.trail, 'utf8').split('\n').slice(0, -1);
    const at = text.findIndex((l) => (JSON.parse(l) as Line)['event'] === 'acted-under-grant');
    expect(at).toBeGreaterThan(0);
    const other = `${grantId.slice(0, -1)}${grantId.endsWith('A') ? 'B' : 'A'}`;
    const forged = [...text];
    forged[at] = forged[at]!.replace(grantId, other);
    expect(forged[at]).not.toBe(text[at]);
    const file = join(R, 'forged.jsonl');
    writeFileSync(file, forged.map((l) => `${l}\n`).join(''));
    const r = await verifyTrail(file, keyFile);
    expect(r.status).toBe(3);
    expect(r.stderr).toContain(`line ${at + 1}`);
  });
});

describe('--audit over --http with two principals', () => {
  it("U1's granted and acted-under-grant lines carry U1's principal tag, U2's asked line another; after SIGTERM audit verify says intact", async () => {
    const server = await serveHttp([
      '--auth-issuer',
      ISSUER,
      '--auth-jwks',
      jwksPath,
      '--key-file',
      keyFile,
      '--audit',
      join(R, 'log', 'trail'),
      ...GRANT_FLAGS,
    ]);
    const trail = /audit trail: (\S+\.jsonl)[ \n]/.exec(server.stderr())?.[1];
    expect(trail).toBeDefined();
    const u1 = await modern(server.url, await token(server.url.href, 'u1'));
    const u2 = await modern(server.url, await token(server.url.href, 'u2'));
    const id = idIn(resultText(await confirmWith(u1, 'cache/f0.tmp', GRANT_ACCEPT)), /Granted \(grant /);
    expectAsked(await call(u2, 'cache/f1.tmp'), 'cache/f1.tmp');
    expect(resultText(await call(u1, 'cache/f1.tmp'))).toContain(`Done under grant ${id}`);
    await u1.close();
    await u2.close();
    server.proc.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    const lines = linesOf(trail!);
    expect(lines.map((l) => l['event'])).toEqual([
      'opened',
      'asked',
      'confirmed',
      'granted',
      'acted',
      'asked',
      'acted-under-grant',
      'acted',
      'closed',
    ]);
    const tagOf = (i: number) => lines[i]!['principal'];
    expect(typeof tagOf(1)).toBe('string');
    for (const i of [2, 3, 4, 6, 7]) expect(tagOf(i), String(lines[i]!['event'])).toBe(tagOf(1));
    expect(tagOf(5)).not.toBe(tagOf(1));
    expect(lines[3]!['grant']).toBe(id);
    expect(lines[6]!['grant']).toBe(id);
    expect(await verifyTrail(trail!, keyFile)).toMatchObject({ status: 0, stdout: `${lines.length}\n` });
  });
});

describe('/metrics over --http counts the grant and plan events', () => {
  it('counts granted, acted-under-grant, grant-exhausted, plan-approved and acted-under-plan by event (control: none of them before the first grant)', async () => {
    const server = await serveHttp(GRANT_FLAGS);
    const client = await modern(server.url);
    const metrics = async (): Promise<string> => {
      const r = await fetch(new URL('/metrics', server.url));
      expect(r.status).toBe(200);
      return r.text();
    };
    const line = (event: string, n: number) => `mcp_confirm_decisions_total{event="${event}",code=""} ${n}`;
    const first = asked(await call(client, 'cache/f0.tmp'));
    const before = await metrics();
    expect(before).toContain(line('asked', 1));
    for (const event of ['granted', 'acted-under-grant', 'grant-exhausted', 'plan-approved', 'acted-under-plan'])
      expect(before).not.toContain(`event="${event}"`);
    await call(client, 'cache/f0.tmp', { requestState: first.state, inputResponses: GRANT_ACCEPT });
    for (const i of [1, 2]) expect(resultText(await call(client, `cache/f${i}.tmp`))).toContain('Done under grant');
    await approvePlan(client, ['cache/f4.tmp', 'cache/f5.tmp']);
    for (const p of ['cache/f4.tmp', 'cache/f5.tmp'])
      expect(resultText(await call(client, p))).toContain('Done under plan');
    const after = await metrics();
    expect(after).toContain(line('asked', 2));
    expect(after).toContain(line('granted', 1));
    expect(after).toContain(line('acted-under-grant', 2));
    expect(after).toContain(line('grant-exhausted', 1));
    expect(after).toContain(line('plan-approved', 1));
    expect(after).toContain(line('acted-under-plan', 2));
  });
});

describe('usage errors of the grant flags (exit 2 naming the flag; control: the fixed command serves)', () => {
  /** Serves over stdio with stdin closed at once: it announces itself and exits 0 at the end of input. */
  async function serves(args: string[], says: string): Promise<void> {
    const r = await run(['--root', root, ...args]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain(says);
  }

  it.each([
    [
      '--grant-max-uses without --grants',
      ['--grant-max-uses', '3'],
      '--grant-max-uses needs --grants same-directory|subtree',
      ['--grants', 'same-directory', '--grant-max-uses', '3'],
      'grants same-directory (at most 3 uses, 900s)',
    ],
    [
      '--grant-max-seconds without --grants',
      ['--grant-max-seconds', '60', '--plans'],
      '--grant-max-seconds needs --grants same-directory|subtree',
      ['--grants', 'subtree', '--grant-max-seconds', '60', '--plans'],
      'grants subtree (at most 20 uses, 60s); plans (confirm_plan)',
    ],
    [
      '--grants prefix',
      ['--grants', 'prefix'],
      '--grants must be same-directory or subtree, got "prefix"',
      ['--grants', 'subtree'],
      'grants subtree (at most 20 uses, 900s)',
    ],
    [
      '--grant-max-seconds 0',
      ['--grants', 'same-directory', '--grant-max-seconds', '0'],
      '--grant-max-seconds must be a whole number of seconds from 1 to 86400',
      ['--grants', 'same-directory', '--grant-max-seconds', '1'],
      'grants same-directory (at most 20 uses, 1s)',
    ],
    [
      '--grant-max-seconds 86401',
      ['--grants', 'same-directory', '--grant-max-seconds', '86401'],
      '--grant-max-seconds must be a whole number of seconds from 1 to 86400',
      ['--grants', 'same-directory', '--grant-max-seconds', '86400'],
      'grants same-directory (at most 20 uses, 86400s)',
    ],
    [
      '--grant-max-uses 0',
      ['--grants', 'same-directory', '--grant-max-uses', '0'],
      '--grant-max-uses must be a whole number from 1 to 1000000, got "0"',
      ['--grants', 'same-directory', '--grant-max-uses', '1000000'],
      'grants same-directory (at most 1000000 uses, 900s)',
    ],
  ])('%s is exit 2 naming it', async (_label, bad, message, fixed, says) => {
    const r = await run(['--root', root, ...bad]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`mcp-confirm: ${message}`);
    expect(r.stderr).toContain("Run 'mcp-confirm --help' for the usage.");
    expect(r.stdout).toBe('');
    await serves(fixed, says);
  });
});
