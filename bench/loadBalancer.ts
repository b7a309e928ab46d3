/**
 * Load through a real balancer: 200 concurrent confirmation flows (a bounded
 * count, loopback only) through HAProxy (docs/haproxy.cfg) in front of two
 * `mcp-confirm --http` replicas sharing a key file and a Redis ledger, with JWT
 * auth. One flow is round 1 (asked), then round 2 sent twice at once with the
 * same state (round-robin spreads the pair over both replicas): exactly one of
 * the pair may delete, the other must be `[ERR_CONFIRM_SPENT]`.
 *
 * Figures: flows per second, p50/p99 of a flow's duration, double deletes, and
 * each replica's resident memory (VmRSS from /proc/PID/status) before and after.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  Client,
  ProtocolError,
  StreamableHTTPClientTransport,
  type CallToolResult,
  type InputRequiredResult,
} from '@modelcontextprotocol/client';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { KeyRing } from '../src/state/keyRing.js';
import { REPO, rssKiB, startDeployment } from './lbDeployment.js';

export interface LbFigure {
  name: string;
  value: number | string;
  unit: string;
}

const FLOWS = 200;
const ISSUER = 'https://auth.bench.test';
const ACCEPT = { confirm: { action: 'accept', content: { confirmed: true } } };

type Outcome = 'deleted' | 'spent' | string;

/** `deleted`, `spent`, or what else it was: an `ERR_CONFIRM_*` code, a JSON-RPC error code, `input_required`. */
function outcomeOf(r: CallToolResult | InputRequiredResult | Error): Outcome {
  if (r instanceof ProtocolError) return `JSON-RPC ${r.code}`;
  if (r instanceof Error)
    return `error: ${r.message.slice(0, 60)}${r.cause ? ` (${String((r.cause as { code?: string }).code ?? r.cause)})` : ''}`;
  if ((r as InputRequiredResult).resultType === 'input_required') return 'input_required';
  const text = ((r as CallToolResult).content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join(' ');
  if ((r as CallToolResult).isError !== true && text.startsWith('Deleted ')) return 'deleted';
  if (text.startsWith('[ERR_CONFIRM_SPENT]')) return 'spent';
  return /^\[(ERR_CONFIRM_[A-Z_]+)\]/.exec(text)?.[1] ?? text.slice(0, 60);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export async function benchLoadBalancer(opts: { redisUrl: string }): Promise<LbFigure[]> {
  const main = join(REPO, '.bench-dist/src/cli/main.js');
  const dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-bench-lb-'));
  const root = join(dir, 'root');
  mkdirSync(root);
  const keyFile = join(dir, 'keys.json');
  writeFileSync(keyFile, JSON.stringify({ keys: [KeyRing.generateSpec('bench')] }), { mode: 0o600 });
  const pair = await generateKeyPair('ES256');
  const jwksPath = join(dir, 'jwks.json');
  writeFileSync(
    jwksPath,
    JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'b1', alg: 'ES256' }] }),
  );
  const deployment = await startDeployment({
    root,
    keyFile,
    redisUrl: opts.redisUrl,
    audience: `bench-lb-${randomUUID()}`,
    auth: { issuer: ISSUER, jwksPath },
    main,
  });
  try {
    const nowS = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ client_id: 'bench' })
      .setProtectedHeader({ alg: 'ES256', kid: 'b1' })
      .setIssuer(ISSUER)
      .setAudience(deployment.url.href)
      .setSubject('bench-user')
      .setIssuedAt(nowS)
      .setExpirationTime(nowS + 3600)
      .sign(pair.privateKey);
    const client = new Client(
      { name: 'bench-lb', version: '0' },
      {
        capabilities: { elicitation: { form: {} } },
        versionNegotiation: { mode: { pin: '2026-07-28' } },
        inputRequired: { autoFulfill: false },
      },
    );
    await client.connect(
      new StreamableHTTPClientTransport(deployment.url, {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    const call = (params: Record<string, unknown>): Promise<CallToolResult | InputRequiredResult | Error> =>
      (
        client.request(
          { method: 'tools/call', params } as never,
          { allowInputRequired: true, timeout: 600_000 } as never,
        ) as Promise<CallToolResult | InputRequiredResult>
      ).catch((e: unknown) => (e instanceof ProtocolError || e instanceof Error ? e : new Error(String(e))));
    for (let i = 0; i < FLOWS; i++) writeFileSync(join(root, `f${i}.txt`), `file ${i}`);
    const before = deployment.replicas.map((r) => rssKiB(r.pid));
    const durationsMs: number[] = [];
    let doubleDeletes = 0;
    let deleted = 0;
    let others = 0;
    const otherOutcomes = new Map<string, number>();
    const other = (o: string): void => void otherOutcomes.set(o, (otherOutcomes.get(o) ?? 0) + 1);
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: FLOWS }, async (_, i) => {
        const start = performance.now();
        const path = `f${i}.txt`;
        const r1 = await call({ name: 'delete_file', arguments: { path } });
        const state = (r1 as InputRequiredResult).requestState;
        if (r1 instanceof Error || typeof state !== 'string') {
          others++;
          other(`round 1: ${outcomeOf(r1)}`);
          return;
        }
        const pair = await Promise.all(
          [0, 1].map(() =>
            call({ name: 'delete_file', arguments: { path }, inputResponses: ACCEPT, requestState: state }),
          ),
        );
        durationsMs.push(performance.now() - start);
        const outcomes = pair.map(outcomeOf);
        const dels = outcomes.filter((o) => o === 'deleted').length;
        if (dels > 1) doubleDeletes++;
        if (dels === 1 && outcomes.includes('spent')) deleted++;
        else {
          others++;
          for (const o of outcomes) if (o !== 'deleted' && o !== 'spent') other(o);
        }
      }),
    );
    const elapsedS = (performance.now() - t0) / 1000;
    const after = deployment.replicas.map((r) => rssKiB(r.pid));
    const left = Array.from({ length: FLOWS }, (_, i) => existsSync(join(root, `f${i}.txt`))).filter(Boolean).length;
    await client.close();
    durationsMs.sort((a, b) => a - b);
    const mb = (kib: number): string => (kib / 1024).toFixed(1);
    const label = `HAProxy + 2 replicas (Redis ledger, JWT), ${FLOWS} concurrent flows`;
    return [
      { name: `${label}: throughput`, value: FLOWS / elapsedS, unit: 'flows/s' },
      { name: `${label}: flow duration p50`, value: percentile(durationsMs, 50), unit: 'ms' },
      { name: `${label}: flow duration p99`, value: percentile(durationsMs, 99), unit: 'ms' },
      {
        name: `${label}: each redeemed twice at once, one deleted + one ERR_CONFIRM_SPENT`,
        value: `${deleted} of ${FLOWS} (other: ${others}${otherOutcomes.size ? ` [${[...otherOutcomes].map(([k, v]) => `${k} ×${v}`).join(', ')}]` : ''}; files left: ${left})`,
        unit: 'flows',
      },
      { name: `${label}: double deletes`, value: String(doubleDeletes), unit: 'flows' },
      ...deployment.replicas.map((r, i) => ({
        name: `${label}: replica ${r.name} RSS before → after`,
        value: `${mb(before[i]!)} → ${mb(after[i]!)}`,
        unit: 'MiB',
      })),
    ];
  } finally {
    await deployment.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
