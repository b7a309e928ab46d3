/**
 * Grants and plans through `mcp-confirm proxy` (issue 18): the built CLI as a subprocess in front of
 * real upstreams (`@modelcontextprotocol/server-filesystem`, fixtures/upstream.mjs,
 * fixtures/planNamedUpstream.mjs), a real v2 client pinned to 2026-07-28 driving every round by hand.
 * Needs `npm run build` first.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CryptoKey } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { ACCEPT, asked, callTool, type Reply } from '../helpers/harness.js';
import { connectModern, MAIN, startHttpServer } from '../helpers/httpServer.js';
import { resultText, runProxy, startStdioProxy, useProxyRoot, type Closers } from '../helpers/proxyProcess.js';
import { mintToken, writeSigningKey } from '../helpers/tokens.js';
import { upstreamCalls as logged } from '../helpers/upstreamCalls.js';

const FS_SERVER = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const UPSTREAM = resolve(import.meta.dirname, 'fixtures/upstream.mjs');
const PLAN_NAMED = resolve(import.meta.dirname, 'fixtures/planNamedUpstream.mjs');
/** A form answer that takes the offered grant. */
const GRANT_ACCEPT = { confirm: { action: 'accept', content: { confirmed: true, scope: 'grant' } } } as const;

const closers: Closers = [];
const testRoot = useProxyRoot('proxygrants', closers);

/** A fresh directory under the test's root, with the subdirectories named. */
function freshDir(kind: string, ...subdirs: string[]): string {
  const dir = mkdtempSync(join(testRoot(), `${kind}-`));
  for (const sub of subdirs) mkdirSync(join(dir, sub));
  return dir;
}

/** Writes a policy file next to `dir` (outside the upstream's root) and returns its path. */
function policyFile(dir: string, policy: unknown): string {
  const path = `${dir}.policy.json`;
  writeFileSync(path, JSON.stringify(policy));
  return path;
}

/** Spawns `mcp-confirm proxy ARGS…` and connects a v2 client pinned to 2026-07-28 that answers no round itself. */
const proxy = (args: string[]) => startStdioProxy(args, { name: 'proxy-grants-test', closers });

/** The requested schema of an input_required reply's form. */
function schemaOf(reply: Reply): unknown {
  if (reply.kind !== 'input_required')
    throw new Error(`expected input_required, got ${JSON.stringify(reply).slice(0, 600)}`);
  const entry = reply.result.inputRequests?.confirm as {
    params?: { requestedSchema?: unknown };
    requestedSchema?: unknown;
  };
  return entry.params?.requestedSchema ?? entry.requestedSchema;
}

const WRITE_GRANT = { arguments: { path: 'same-directory', content: 'any' }, maxUses: 4, maxSeconds: 900 };

/** The proxy in front of server-filesystem on `root`, its policy granting write_file {@link WRITE_GRANT}. */
const writeGrantProxy = (root: string) =>
  proxy([
    '--policy',
    policyFile(root, { grants: { write_file: WRITE_GRANT } }),
    '--',
    process.execPath,
    FS_SERVER,
    root,
  ]);

describe('grants in the proxy policy, in front of server-filesystem', () => {
  it('write_file under a same-directory grant (maxUses 4): one question, three calls without one, the fifth asked', async () => {
    const root = freshDir('grant', 'cache');
    const p = await writeGrantProxy(root);
    const file = (i: number) => join(root, 'cache', `f${i}.txt`);
    const first = await p.call('write_file', { path: file(0), content: 'c0' });
    const { state, message } = asked(first);
    expect(message).toContain('Run the tool `write_file` of the upstream server');
    expect(message).toContain(
      `Or allow: calls of \`write_file\` with \`path\` any path directly in \`${root}/cache/\`, \`content\` any value for 15 minutes, at most 4 calls in all`,
    );
    expect(schemaOf(first)).toHaveProperty('properties.scope');
    const granted = resultText(
      await p.call(
        'write_file',
        { path: file(0), content: 'c0' },
        { requestState: state, inputResponses: GRANT_ACCEPT },
      ),
    );
    expect(granted).toContain('Granted (grant ');
    expect(readFileSync(file(0), 'utf8')).toBe('c0');
    for (const i of [1, 2, 3]) {
      const reply = await p.call('write_file', { path: file(i), content: `c${i}` });
      expect(resultText(reply)).toContain('Done under grant ');
      expect(reply.kind === 'result' && reply.isError).toBe(false);
      expect(readFileSync(file(i), 'utf8')).toBe(`c${i}`);
    }
    // The grant's four uses are spent: the fifth call is asked, nothing written.
    asked(await p.call('write_file', { path: file(4), content: 'c4' }));
    expect(existsSync(file(4))).toBe(false);
  });

  it('a path in another directory, or one with a .. segment back out of the granted one, is asked and not written; one in the granted directory runs under the grant (control)', async () => {
    const root = freshDir('grantdir', 'cache', 'other');
    const p = await writeGrantProxy(root);
    const args0 = { path: join(root, 'cache', 'a.txt'), content: 'a' };
    const { state } = asked(await p.call('write_file', args0));
    resultText(await p.call('write_file', args0, { requestState: state, inputResponses: GRANT_ACCEPT }));
    const elsewhere = join(root, 'other', 'b.txt');
    asked(await p.call('write_file', { path: elsewhere, content: 'b' }));
    const backOut = `${root}/cache/../other/c.txt`;
    asked(await p.call('write_file', { path: backOut, content: 'c' }));
    expect(existsSync(elsewhere)).toBe(false);
    expect(existsSync(join(root, 'other', 'c.txt'))).toBe(false);
    // Control: a file directly in the granted directory.
    expect(resultText(await p.call('write_file', { path: join(root, 'cache', 'd.txt'), content: 'd' }))).toContain(
      'Done under grant ',
    );
    expect(readFileSync(join(root, 'cache', 'd.txt'), 'utf8')).toBe('d');
  });

  it('a form answer without scope approves that call only: the next call is asked (control: scope "grant" above lets it run)', async () => {
    const root = freshDir('noscope', 'cache');
    const p = await writeGrantProxy(root);
    const args0 = { path: join(root, 'cache', 'a.txt'), content: 'a' };
    const { state } = asked(await p.call('write_file', args0));
    expect(
      resultText(await p.call('write_file', args0, { requestState: state, inputResponses: ACCEPT })),
    ).not.toContain('Granted');
    asked(await p.call('write_file', { path: join(root, 'cache', 'b.txt'), content: 'b' }));
    expect(existsSync(join(root, 'cache', 'b.txt'))).toBe(false);
  });

  it('without a grants key, the question and its form are exactly as before: no offer, no scope field', async () => {
    const root = freshDir('nogrant', 'cache');
    const p = await proxy(['--', process.execPath, FS_SERVER, root]);
    const reply = await p.call('write_file', { path: join(root, 'cache', 'a.txt'), content: 'a' });
    expect(asked(reply).message).not.toContain('Or allow');
    expect(schemaOf(reply)).toEqual({
      type: 'object',
      properties: { confirmed: expect.objectContaining({ type: 'boolean' }) },
      required: ['confirmed'],
    });
  });
});

describe('a 2025-era client (SDK v1, elicitation/create) through the proxy', () => {
  it('answering the form with scope "grant" is asked once, then two more writes run without an elicitation; answering without scope (control) is asked every time', async () => {
    const run = async (content: Record<string, unknown>) => {
      const root = freshDir('legacy', 'cache');
      const policy = policyFile(root, { grants: { write_file: WRITE_GRANT } });
      const client = new V1Client({ name: 'legacy', version: '0.0.0' }, { capabilities: { elicitation: {} } });
      const schemas: unknown[] = [];
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        schemas.push((req.params as { requestedSchema?: unknown }).requestedSchema);
        return { action: 'accept', content } as never;
      });
      await client.connect(
        new V1StdioClientTransport({
          command: process.execPath,
          args: [MAIN, 'proxy', '--policy', policy, '--', process.execPath, FS_SERVER, root],
          stderr: 'pipe',
        }),
      );
      closers.push(() => client.close());
      const texts: string[] = [];
      for (const n of ['a', 'b', 'c']) {
        const path = join(root, 'cache', `${n}.txt`);
        const r = (await client.callTool({ name: 'write_file', arguments: { path, content: n } })) as {
          content: Array<{ text?: string }>;
        };
        texts.push(r.content.map((c) => c.text ?? '').join(' '));
        expect(readFileSync(path, 'utf8')).toBe(n);
      }
      return { schemas, texts };
    };
    const granted = await run({ confirmed: true, scope: 'grant' });
    expect(granted.schemas).toHaveLength(1);
    expect(granted.schemas[0]).toHaveProperty('properties.scope');
    expect(granted.texts[0]).toContain('Granted (grant ');
    expect(granted.texts[1]).toContain('Done under grant ');
    expect(granted.texts[2]).toContain('Done under grant ');
    const each = await run({ confirmed: true });
    expect(each.schemas).toHaveLength(3);
    expect(each.texts.join('\n')).not.toContain('under grant');
  });
});

describe("a grant is bound to the upstream and the tool's definition", () => {
  it("after the upstream changed the tool's definition, a call the grant covers is asked and not forwarded (control: before the change it ran under the grant)", async () => {
    const dir = freshDir('bound');
    const policy = policyFile(dir, { grants: { write_note: { arguments: { text: 'any' } } } });
    const p = await proxy(['--policy', policy, '--', process.execPath, UPSTREAM, dir]);
    const { state } = asked(await p.call('write_note', { text: 'one' }));
    resultText(await p.call('write_note', { text: 'one' }, { requestState: state, inputResponses: GRANT_ACCEPT }));
    // Control: the grant covers another text.
    expect(resultText(await p.call('write_note', { text: 'two' }))).toContain('Done under grant ');
    // The upstream changes write_note's description (its definition digest).
    resultText(await p.call('bump', {}));
    asked(await p.call('write_note', { text: 'three' }));
    expect(logged(dir)).toEqual(['one', 'two']);
  });
});

describe('grants that cannot be used: start-up errors', () => {
  it('an invalid grants entry exits 2 naming the entry and its field, before anything is served; the valid entry serves (control)', async () => {
    const root = freshDir('invalid');
    const bad = policyFile(`${root}-bad`, { grants: { write_file: { arguments: { path: 'prefix' } } } });
    const refused = await runProxy(['--policy', bad, '--', process.execPath, FS_SERVER, root]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(
      `--policy ${bad}: the grant for "write_file": arguments.path: unknown matcher "prefix" (one of exact, any, same-directory, subtree, at-most)`,
    );
    expect(refused.stderr).not.toContain('serving');
    const good = policyFile(`${root}-good`, { grants: { write_file: WRITE_GRANT } });
    const served = await runProxy(['--policy', good, '--', process.execPath, FS_SERVER, root]);
    expect(served.status).toBe(0);
    expect(served.stderr).toContain('grants for 1 tool');
  });

  it('a grant for a tool the policy denies, allows, or whose annotations let it pass unasked exits 2 naming it; confirming that tool serves (control)', async () => {
    const root = freshDir('never');
    const run = (name: string, policy: unknown) => {
      const path = policyFile(`${root}-${name}`, policy);
      return runProxy(['--policy', path, '--', process.execPath, FS_SERVER, root]).then((r) => ({ ...r, path }));
    };
    const denied = await run('deny', { deny: ['write_*'], grants: { write_file: {} } });
    expect(denied.status).toBe(2);
    expect(denied.stderr).toContain(`--policy ${denied.path}: the grant for "write_file": the policy denies this tool`);
    const allowed = await run('allow', { allow: ['write_file'], grants: { write_file: {} } });
    expect(allowed.status).toBe(2);
    expect(allowed.stderr).toContain('the grant for "write_file": the policy allows this tool without asking');
    const readOnly = await run('readonly', { grants: { read_text_file: {} } });
    expect(readOnly.status).toBe(2);
    expect(readOnly.stderr).toContain(
      `--policy ${readOnly.path}: the grant for "read_text_file": the upstream's annotations mark this tool read-only`,
    );
    const confirmed = await run('confirm', { confirm: ['read_text_file'], grants: { read_text_file: {} } });
    expect(confirmed.status).toBe(0);
    expect(confirmed.stderr).toContain('serving');
  });
});

describe('plans through the proxy (--plans)', () => {
  const plan = (root: string, names: string[]) => ({
    calls: names.map((n) => ({ tool: 'write_file', arguments: { path: join(root, 'cache', n), content: `${n}!` } })),
  });

  it('a plan of 3 write_file calls approved once: each forwarded once without a question, a repeat and a fourth call asked', async () => {
    const root = freshDir('plan', 'cache');
    const p = await proxy(['--plans', '--', process.execPath, FS_SERVER, root]);
    const listed = (await p.client.listTools()).tools;
    expect(listed.filter((t) => t.name === 'confirm_plan').map((t) => t.title)).toEqual(['Approve a plan of calls']);
    const three = plan(root, ['a.txt', 'b.txt', 'c.txt']);
    const firstAsk = asked(await p.call('confirm_plan', three));
    expect(firstAsk.message).toContain('Approve this plan of 3 calls?');
    // Round 2 without an answer asks again, the same plan, claiming no change of the upstream or its tools.
    const { state, message } = asked(await p.call('confirm_plan', three, { requestState: firstAsk.state }));
    expect(message).toBe(firstAsk.message);
    for (const n of ['a.txt', 'b.txt', 'c.txt']) expect(message).toContain(`${root}/cache/${n}`);
    const approved = resultText(await p.call('confirm_plan', three, { requestState: state, inputResponses: ACCEPT }));
    expect(approved).toMatch(/^Plan \S+ approved: make each of its 3 calls once/);
    // Approving acted on nothing.
    for (const n of ['a.txt', 'b.txt', 'c.txt']) expect(existsSync(join(root, 'cache', n))).toBe(false);
    for (const call of three.calls) {
      const reply = await p.call('write_file', call.arguments);
      expect(resultText(reply)).toContain('Done under plan ');
      expect(readFileSync(call.arguments.path, 'utf8')).toBe(call.arguments.content);
    }
    // Each slot is used once: the same call again is asked, and so is a fourth.
    writeFileSync(join(root, 'cache', 'a.txt'), 'changed since');
    asked(await p.call('write_file', three.calls[0]!.arguments));
    expect(readFileSync(join(root, 'cache', 'a.txt'), 'utf8')).toBe('changed since');
    asked(await p.call('write_file', { path: join(root, 'cache', 'd.txt'), content: 'd.txt!' }));
    expect(existsSync(join(root, 'cache', 'd.txt'))).toBe(false);
  });

  it('a call whose arguments differ from the planned one (other content) is asked and not written; the exact planned call runs (control)', async () => {
    const root = freshDir('planexact', 'cache');
    const p = await proxy(['--plans', '--', process.execPath, FS_SERVER, root]);
    const one = plan(root, ['a.txt']);
    const { state } = asked(await p.call('confirm_plan', one));
    resultText(await p.call('confirm_plan', one, { requestState: state, inputResponses: ACCEPT }));
    const path = join(root, 'cache', 'a.txt');
    asked(await p.call('write_file', { path, content: 'something else' }));
    expect(existsSync(path)).toBe(false);
    expect(resultText(await p.call('write_file', one.calls[0]!.arguments))).toContain('Done under plan ');
    expect(readFileSync(path, 'utf8')).toBe('a.txt!');
  });

  it('a plan listing a tool the proxy does not confirm (read-only, passed through) or does not know is refused naming the call, nothing asked; write_file is planned (control)', async () => {
    const root = freshDir('planrefused', 'cache');
    const p = await proxy(['--plans', '--', process.execPath, FS_SERVER, root]);
    const readOnly = await p.call('confirm_plan', {
      calls: [{ tool: 'read_text_file', arguments: { path: join(root, 'x') } }],
    });
    expect(resultText(readOnly)).toContain('Call 1 names `read_text_file`, which is not a tool this server confirms');
    const unknown = await p.call('confirm_plan', {
      calls: [...plan(root, ['a.txt']).calls, { tool: 'rm_rf', arguments: {} }],
    });
    expect(resultText(unknown)).toContain('Call 2 names `rm_rf`');
    const badArgs = await p.call('confirm_plan', {
      calls: [{ tool: 'write_file', arguments: { path: join(root, 'cache', 'a.txt'), content: 5 } }],
    });
    expect(resultText(badArgs)).toContain('Call 1 (`write_file`) was refused: [ERR_CONFIRM_BAD_ARGUMENT]');
    asked(await p.call('confirm_plan', plan(root, ['a.txt'])));
  });

  it('without --plans, confirm_plan is neither listed nor answered by the proxy (control for the listing above)', async () => {
    const root = freshDir('noplans');
    const p = await proxy(['--', process.execPath, FS_SERVER, root]);
    expect((await p.client.listTools()).tools.map((t) => t.name)).not.toContain('confirm_plan');
    const reply = await p.call('confirm_plan', plan(root, ['a.txt']));
    expect(resultText(reply)).toMatch(/^\[ERR_CONFIRM_UPSTREAM_TOOL_GONE\]/);
  });
});

describe('an upstream tool named confirm_plan', () => {
  it('with --plans: exit 2 naming it, before serving; without --plans (control) it is listed and forwarded as any tool', async () => {
    const dir = freshDir('named');
    const refused = await runProxy(['--plans', '--', process.execPath, PLAN_NAMED, dir]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('--plans: the upstream has a tool named confirm_plan');
    expect(refused.stderr).not.toContain('serving');
    const p = await proxy(['--', process.execPath, PLAN_NAMED, dir]);
    const listed = (await p.client.listTools()).tools.filter((t) => t.name === 'confirm_plan');
    expect(listed.map((t) => t.description)).toEqual(["The upstream's own confirm_plan."]);
    expect(resultText(await p.call('confirm_plan', {}))).toBe('upstream confirm_plan ran');
    expect(logged(dir)).toEqual([{ tool: 'confirm_plan', arguments: {} }]);
  });

  it("with --plans, one the upstream lists only later is hidden: tools/list shows the proxy's once, and its calls are the proxy's, never forwarded", async () => {
    const dir = freshDir('later');
    const p = await proxy(['--plans', '--', process.execPath, PLAN_NAMED, dir, 'later']);
    resultText(await p.call('reveal', {}));
    const listed = (await p.client.listTools()).tools.filter((t) => t.name === 'confirm_plan');
    expect(listed.map((t) => t.title)).toEqual(['Approve a plan of calls']);
    const reply = await p.call('confirm_plan', { calls: [{ tool: 'write_note', arguments: { text: 'x' } }] });
    expect(asked(reply).message).toContain('Approve this plan of 1 call?');
    expect(logged(dir)).toEqual([{ tool: 'reveal', arguments: {} }]);
  });
});

describe('over --http, two principals (JWT subjects u1 and u2)', () => {
  const ISSUER = 'https://auth.example.test';
  let signingKey: CryptoKey;
  let url: URL;
  let dir: string;

  /** A JWT access token for the proxy's resource, subject `sub`. */
  const token = (sub: string): Promise<string> =>
    mintToken(signingKey, ISSUER, sub, url.href, { clientId: 'notes-app', lifetimeSeconds: 600 });
  const as = async (sub: string) => {
    const client = await connectModern(url, await token(sub));
    closers.push(() => client.close());
    return (name: string, a: unknown, extra: object = {}) => callTool(client, { name, arguments: a, ...extra });
  };

  beforeAll(async () => {
    dir = freshDir('http');
    const jwks = `${dir}.jwks.json`;
    signingKey = await writeSigningKey(jwks);
    const policy = policyFile(dir, { grants: { write_note: { arguments: { text: 'any' } } } });
    const proxied = await startHttpServer([
      'proxy',
      '--http',
      '127.0.0.1:0',
      '--auth-issuer',
      ISSUER,
      '--auth-jwks',
      jwks,
      '--plans',
      '--policy',
      policy,
      '--',
      process.execPath,
      UPSTREAM,
      dir,
    ]);
    url = proxied.url;
    closers.push(async () => {
      if (proxied.proc.exitCode === null) proxied.proc.kill('SIGKILL');
      await proxied.exited;
    });
  });

  it("attack: u1's grant is never used by u2 (asked, nothing forwarded); control: u1's next call runs under it", async () => {
    const u1 = await as('u1');
    const u2 = await as('u2');
    const { state } = asked(await u1('write_note', { text: 'g-one' }));
    expect(
      resultText(await u1('write_note', { text: 'g-one' }, { requestState: state, inputResponses: GRANT_ACCEPT })),
    ).toContain('Granted (grant ');
    asked(await u2('write_note', { text: 'g-two' }));
    expect(resultText(await u1('write_note', { text: 'g-three' }))).toContain('Done under grant ');
    expect(logged(dir).filter((t) => String(t).startsWith('g-'))).toEqual(['g-one', 'g-three']);
  });

  it("attack: u1's plan slot is never taken by u2 (asked, nothing forwarded); control: u1's planned call runs once", async () => {
    const u1 = await as('u1');
    const u2 = await as('u2');
    const planned = { calls: [{ tool: 'write_note', arguments: { text: 'p-one' } }] };
    const { state } = asked(await u1('confirm_plan', planned));
    expect(resultText(await u1('confirm_plan', planned, { requestState: state, inputResponses: ACCEPT }))).toContain(
      'approved',
    );
    // u2 has no grant of its own: the call is asked.
    asked(await u2('write_note', { text: 'p-one' }));
    expect(resultText(await u1('write_note', { text: 'p-one' }))).toContain('Done under plan ');
    expect(logged(dir).filter((t) => String(t).startsWith('p-'))).toEqual(['p-one']);
  });
});
