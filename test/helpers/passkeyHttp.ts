/**
 * What the passkey-over-HTTP suites share (test/e2e/passkeyHttp.test.ts for `mcp-confirm --http`,
 * test/e2e/proxyPasskeyHttp.test.ts for `mcp-confirm proxy --http`): free ports on several
 * loopback addresses, RS256 access tokens, a URL-mode client over Streamable HTTP, and round 1's
 * URL elicitation.
 */
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { Client, StreamableHTTPClientTransport, type InputRequiredResult } from '@modelcontextprotocol/client';
import { SignJWT, type CryptoKey } from 'jose';
import type { Reply } from './harness.js';

/** Listens on `host:port` exclusively (IPv6 only for `::1`). */
export function listenOn(host: string, port: number): Promise<TcpServer> {
  return new Promise((res, rej) => {
    const srv = createTcpServer();
    srv.once('error', rej);
    srv.listen({ host, port, ipv6Only: host === '::1', exclusive: true }, () => res(srv));
  });
}

/**
 * A port free on every one of `hosts` at once (the first is asked for a random port, the others
 * tried on it; all released before returning). The enrolment page holds 127.0.0.1 and ::1.
 */
export async function freePortOn(hosts: readonly [string, ...string[]]): Promise<number> {
  for (;;) {
    const first = await listenOn(hosts[0], 0);
    const port = (first.address() as { port: number }).port;
    const others = await Promise.allSettled(hosts.slice(1).map((h) => listenOn(h, port)));
    const held = [first, ...others.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []))];
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
    if (others.every((o) => o.status === 'fulfilled')) return port;
  }
}

/** An RS256 JWT access token (`typ: at+jwt`, kid `k1`, scope `mcp`) of `sub` at `issuer` for `audience`, valid for an hour. */
export function mintToken(signingKey: CryptoKey, issuer: string, sub: string, audience: string): Promise<string> {
  const nowS = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope: 'mcp' })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'at+jwt' })
    .setIssuer(issuer)
    .setAudience(audience)
    .setSubject(sub)
    .setIssuedAt(nowS - 5)
    .setExpirationTime(nowS + 3600)
    .sign(signingKey);
}

/** A v2 client pinned to 2026-07-28 over Streamable HTTP with a bearer token, declaring URL elicitation, rounds by hand. */
export async function connectUrlClient(name: string, mcpUrl: URL, bearer: string): Promise<Client> {
  const client = new Client(
    { name, version: '0.0.0' },
    {
      capabilities: { elicitation: { url: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      inputRequired: { autoFulfill: false },
    },
  );
  await client.connect(
    new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } }),
  );
  return client;
}

/** Round 1's URL-mode elicitation (key `confirm`): its mode, url, message and the state. */
export function urlElicitation(reply: Reply): { mode: string; url: string; message: string; state: string } {
  if (reply.kind !== 'input_required' || reply.state === undefined)
    throw new Error(`expected input_required, got ${JSON.stringify(reply).slice(0, 400)}`);
  const entry = (reply.result as InputRequiredResult).inputRequests?.confirm as {
    params: { mode?: string; url?: string; message: string };
  };
  if (entry.params.url === undefined) throw new Error(`no url in ${JSON.stringify(reply).slice(0, 400)}`);
  return {
    mode: entry.params.mode ?? 'form',
    url: entry.params.url,
    message: entry.params.message,
    state: reply.state,
  };
}
