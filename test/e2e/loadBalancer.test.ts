/**
 * Replicas behind a real load balancer: two `mcp-confirm --http` processes (the
 * built CLI) sharing a key file and a Redis ledger, behind HAProxy running the
 * configuration docs/deployment.md shows (docs/haproxy.cfg, unchanged), with JWT auth against a
 * local JWK set, and real clients of both protocol eras through the balancer.
 *
 * - 2026-07-28 requests are balanced round-robin without stickiness: round 1
 *   and round 2 of one confirmation are answered by different replicas
 *   (HAProxy names the replica in `X-Replica`; each replica's own log agrees);
 * - 2025-era sessions are pinned by `Mcp-Session-Id`, so the answer to a pushed
 *   `elicitation/create` reaches the replica that asked; the same balancer
 *   without the stick lines breaks such a session (control);
 * - a replay is `[ERR_CONFIRM_SPENT]`, a state U1 was asked for presented by U2 is `-32602`.
 *
 * Needs `npm run build`, `haproxy` (Debian package; scripts/test.sh installs it)
 * and `REDIS_URL` (the test runner's Redis). Missing ones fail, never skip.
 * No assertion depends on time; the timeouts are only generous bounds for a loaded machine.
 */
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  freePort,
  HAPROXY_CFG,
  haproxyPath,
  LB_HOST,
  MAIN,
  REPO,
  startDeployment,
  type Deployment,
} from '../../bench/lbDeployment.js';
import { PROCESS_DEADLINE_MS } from '../helpers/deadlines.js';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS } from '../helpers/harness.js';
import { stderrSays } from '../helpers/processes.js';

const ISSUER = 'https://auth.example.test';
const TIMEOUT_MS = 240_000;

let R: string;
let root: string;
let privateKey: CryptoKey;
let deployment: Deployment;
const closers: Array<() => Promise<unknown>> = [];

function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url)
    throw new Error(
      'REDIS_URL is not set: start Redis with scripts/start-redis.sh and export REDIS_URL=redis://127.0.0.1:PORT',
    );
  return url;
}

beforeAll(async () => {
  haproxyPath(); // throws when haproxy is missing: a failure, never a skip
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-lb-')));
  root = join(R, 'root');
  mkdirSync(root);
  const { stdout } = await promisify(execFile)(process.execPath, [MAIN, 'keygen', '--kid', 'lb1'], {
    encoding: 'utf8',
    timeout: PROCESS_DEADLINE_MS,
  });
  const keyFile = join(R, 'keys.json');
  writeFileSync(keyFile, stdout, { mode: 0o600 });
  const pair = await generateKeyPair('RS256', { extractable: true });
  privateKey = pair.privateKey;
  const jwksPath = join(R, 'jwks.json');
  writeFileSync(
    jwksPath,
    JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] }),
  );
  deployment = await startDeployment({
    root,
    keyFile,
    redisUrl: redisUrl(),
    audience: `lb-${randomUUID()}`,
    auth: { issuer: ISSUER, jwksPath },
  });
}, TIMEOUT_MS);

afterAll(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
  await deployment?.stop();
  if (R) rmSync(R, { recursive: true, force: true });
}, TIMEOUT_MS);

beforeEach(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
});

/** A JWT for the balancer's resource URL (every replica's `--resource`). */
function token(sub: string): Promise<string> {
  const nowS = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope: 'mcp', client_id: 'notes-app' })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'at+jwt' })
    .setIssuer(ISSUER)
    .setAudience(deployment.url.href)
    .setSubject(sub)
    .setIssuedAt(nowS - 5)
    .setExpirationTime(nowS + 3600)
    .sign(privateKey);
}

/** One HTTP exchange as seen by the client: what it sent and which replica HAProxy says answered. */
interface Hop {
  /** The JSON-RPC method, `response` for a client's answer to a server request, or the HTTP method for bodiless requests. */
  kind: string;
  /** Whether the request carried a `requestState` (round 2 of an MRTR call). */
  withState: boolean;
  status: number;
  replica: string | null;
}

/** A fetch that records each exchange's `X-Replica` (set by docs/haproxy.cfg). */
function recordingFetch(hops: Hop[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    let kind = init?.method ?? 'GET';
    let withState = false;
    if (typeof init?.body === 'string') {
      const body = JSON.parse(init.body) as { method?: string; params?: { requestState?: unknown } };
      kind = body.method ?? 'response';
      withState = typeof body.params?.requestState === 'string';
    }
    hops.push({ kind, withState, status: res.status, replica: res.headers.get('x-replica') });
    return res;
  };
}

async function modernClient(sub: string, hops: Hop[], url = deployment.url): Promise<Client> {
  const client = new Client({ name: 'lb-modern', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${await token(sub)}` } },
    fetch: recordingFetch(hops),
  });
  await client.connect(transport);
  closers.push(() => client.close());
  return client;
}

async function legacyClient(
  sub: string,
  hops: Hop[],
  url = deployment.url,
): Promise<{ client: V1Client; questions: string[] }> {
  const client = new V1Client({ name: 'lb-legacy', version: '0.0.0' }, { capabilities: { elicitation: { form: {} } } });
  const questions: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    questions.push((req.params as { message: string }).message);
    return { action: 'accept', content: { confirmed: true } };
  });
  const transport = new V1StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${await token(sub)}` } },
    fetch: recordingFetch(hops),
  });
  await client.connect(transport as never);
  closers.push(() => client.close());
  return { client, questions };
}

function file(name: string): string {
  writeFileSync(join(root, name), `contents of ${name}`);
  return name;
}

/**
 * Resolves once a replica's log names `line` (its own account of what it did). Its stderr is its own
 * pipe, so the line may arrive after the answer: waited for, bounded only by the process deadline.
 */
async function replicaSays(replica: string, line: string): Promise<void> {
  const r = deployment.replicas.find((x) => x.name === replica);
  if (!r) throw new Error(`no replica named ${JSON.stringify(replica)}`);
  await stderrSays(() => r.stderr(), line);
}

describe('docs/deployment.md shows the HAProxy configuration the test runs', () => {
  it('its load-balancer section includes docs/haproxy.cfg verbatim', () => {
    const page = readFileSync(join(REPO, 'docs', 'deployment.md'), 'utf8');
    const cfg = readFileSync(HAPROXY_CFG, 'utf8');
    const block = /<!-- haproxy\.cfg:begin -->\n```haproxy\n([\s\S]*?)```\n<!-- haproxy\.cfg:end -->/.exec(page);
    expect(block, 'docs/deployment.md has no <!-- haproxy.cfg:begin --> block').not.toBeNull();
    expect(block![1]).toBe(cfg);
  });
});

describe('two --http replicas sharing keys and a Redis ledger behind HAProxy', () => {
  it(
    'a 2026-era client confirms through the balancer: round 1 and round 2 are answered by different replicas, the file is deleted once, and a replay is [ERR_CONFIRM_SPENT]',
    async () => {
      const hops: Hop[] = [];
      const client = await modernClient('u1', hops);
      const name = file('modern.txt');
      const asking = hops.length;
      const { state, message } = asked(await callTool(client, { name: 'delete_file', arguments: { path: name } }));
      expect(message).toContain(name);
      expect(existsSync(join(root, name))).toBe(true);
      const done = await callTool(client, {
        name: 'delete_file',
        arguments: { path: name },
        inputResponses: ACCEPT,
        requestState: state,
      });
      expect(done).toMatchObject({ kind: 'result', isError: false });
      expect(existsSync(join(root, name))).toBe(false);

      const calls = hops.slice(asking).filter((h) => h.kind === 'tools/call');
      expect(calls.map((h) => h.withState)).toEqual([false, true]);
      const [round1, round2] = calls.map((h) => h.replica);
      expect(['r1', 'r2']).toContain(round1);
      expect(['r1', 'r2']).toContain(round2);
      expect(round2).not.toBe(round1); // no stickiness: the other replica opened the state and spent it in Redis
      // Each replica's own log agrees: the asker asked, the other one confirmed and deleted.
      await replicaSays(round1!, 'asked to confirm delete_file');
      await replicaSays(round2!, 'delete_file confirmed and done');

      // Once: the same state again (wherever it lands) is spent.
      writeFileSync(join(root, name), 'again');
      const replay = await callTool(client, {
        name: 'delete_file',
        arguments: { path: name },
        inputResponses: ACCEPT,
        requestState: state,
      });
      expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_SPENT]'), JSON.stringify(replay)).toBe(
        true,
      );
      expect(existsSync(join(root, name))).toBe(true);
      // The replay went to a replica too, and both replicas answered this client.
      expect(new Set(hops.slice(asking).map((h) => h.replica))).toEqual(new Set(['r1', 'r2']));
    },
    TIMEOUT_MS,
  );

  it(
    'a 2025-era v1 client confirms through the balancer: its session is pinned by Mcp-Session-Id, so the answer to the pushed elicitation/create reaches the replica that asked, and the file is deleted once',
    async () => {
      const hops: Hop[] = [];
      const { client, questions } = await legacyClient('u1', hops);
      const name = file('legacy.txt');
      const r = (await client.callTool({ name: 'delete_file', arguments: { path: name } })) as {
        content: Array<{ text?: string }>;
        isError?: boolean;
      };
      expect(r.isError ?? false, JSON.stringify(r)).toBe(false);
      expect(r.content[0]?.text).toMatch(/^Deleted `.*legacy\.txt` \(\d+ bytes\)\.$/);
      expect(questions).toHaveLength(1);
      expect(questions[0]).toContain(name);
      expect(existsSync(join(root, name))).toBe(false);

      const init = hops.find((h) => h.kind === 'initialize');
      const answer = hops.find((h) => h.kind === 'response');
      const call = hops.find((h) => h.kind === 'tools/call');
      expect(init?.replica).toMatch(/^r[12]$/);
      // The elicitation answer is a separate POST: without the stick table, round-robin would send it to the other replica.
      expect(answer).toMatchObject({ status: 202, replica: init!.replica });
      expect(call?.replica).toBe(init!.replica);
      for (const h of hops) expect(h.replica, JSON.stringify(h)).toBe(init!.replica);
      expect(hops.filter((h) => h.kind !== 'GET').length).toBeGreaterThanOrEqual(4); // initialize, initialized, tools/call, the answer

      // Once: asking again refuses before asking (the file is gone).
      const again = (await client.callTool({ name: 'delete_file', arguments: { path: name } })) as {
        content: Array<{ text?: string }>;
        isError?: boolean;
      };
      expect(again.isError).toBe(true);
      expect(again.content[0]?.text).toMatch(/^\[ERR_CONFIRM_GONE\]/);
      expect(questions).toHaveLength(1);
    },
    TIMEOUT_MS,
  );

  it(
    'a state asked for by U1, presented by U2 through the balancer, is -32602 and deletes nothing; U1 then deletes once',
    async () => {
      const hopsU1: Hop[] = [];
      const hopsU2: Hop[] = [];
      const u1 = await modernClient('u1', hopsU1);
      const u2 = await modernClient('u2', hopsU2);
      const name = file('bind7.txt');
      const { state } = asked(await callTool(u1, { name: 'delete_file', arguments: { path: name } }));
      const stolen = await callTool(u2, {
        name: 'delete_file',
        arguments: { path: name },
        inputResponses: ACCEPT,
        requestState: state,
      });
      expect(stolen).toMatchObject({ kind: 'error', code: -32602 });
      expect(existsSync(join(root, name))).toBe(true);
      const own = await callTool(u1, {
        name: 'delete_file',
        arguments: { path: name },
        inputResponses: ACCEPT,
        requestState: state,
      });
      expect(own).toMatchObject({ kind: 'result', isError: false });
      expect(existsSync(join(root, name))).toBe(false);
      expect(hopsU2.filter((h) => h.kind === 'tools/call').map((h) => h.replica)).toEqual([
        expect.stringMatching(/^r[12]$/),
      ]);
    },
    TIMEOUT_MS,
  );

  it(
    'control: the same HAProxy configuration without its stick lines breaks a 2025-era session (a request lands on the replica that never saw initialize: 404), while the pinned balancer serves it',
    async () => {
      const cfg = readFileSync(HAPROXY_CFG, 'utf8');
      const unpinned = cfg
        .split('\n')
        .filter((l) => !/^\s*stick(-table)?\s/.test(l))
        .join('\n');
      expect(unpinned).not.toBe(cfg);
      const cfgPath = join(R, 'unpinned.cfg');
      writeFileSync(cfgPath, unpinned);
      const port = await freePort(LB_HOST);
      // Same public host (the replicas' Host check ignores the port; the tokens' aud is the pinned balancer's URL, which every replica expects).
      const lb = spawn(haproxyPath(), ['-db', '-f', cfgPath], {
        env: {
          ...process.env,
          MCP_LB_BIND: `${LB_HOST}:${port}`,
          MCP_PUBLIC_HOST: deployment.url.host,
          MCP_REPLICA_1: deployment.replicas[0]!.url.host,
          MCP_REPLICA_2: deployment.replicas[1]!.url.host,
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      const lbExited = new Promise<void>((res) => lb.once('exit', () => res()));
      closers.push(async () => {
        lb.kill('SIGTERM');
        await lbExited;
      });
      const url = new URL(`http://${LB_HOST}:${port}/mcp`);
      for (;;) {
        if (lb.exitCode !== null) throw new Error('haproxy (unpinned) exited during start-up');
        const ok = await fetch(new URL('/healthz', url)).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const hops: Hop[] = [];
      const name = file('unpinned.txt');
      const outcome = await (async () => {
        const { client } = await legacyClient('u1', hops, url);
        return client.callTool({ name: 'delete_file', arguments: { path: name } });
      })().then(
        (r) => ({ ok: true as const, r }),
        (e: unknown) => ({ ok: false as const, e }),
      );
      // Round-robin sent the session's second request to the other replica, which answered 404 "Session not found".
      const init = hops.find((h) => h.kind === 'initialize');
      const lost = hops.find((h) => h.status === 404);
      expect(outcome.ok, JSON.stringify(hops)).toBe(false);
      expect(lost?.replica).toMatch(/^r[12]$/);
      expect(lost?.replica).not.toBe(init?.replica);
      expect(existsSync(join(root, name))).toBe(true);
      // Control: the pinned balancer serves the same client and file.
      const pinnedHops: Hop[] = [];
      const { client } = await legacyClient('u1', pinnedHops);
      const r = (await client.callTool({ name: 'delete_file', arguments: { path: name } })) as { isError?: boolean };
      expect(r.isError ?? false).toBe(false);
      expect(existsSync(join(root, name))).toBe(false);
    },
    TIMEOUT_MS,
  );
});
