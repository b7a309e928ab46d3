/**
 * What the passkey-over-HTTP suites share (test/e2e/passkeyHttp.test.ts for `mcp-confirm --http`,
 * test/e2e/proxyPasskeyHttp.test.ts for `mcp-confirm proxy --http`): free ports on several
 * loopback addresses, a signing key and its JWK set and RS256 access tokens (from tokens.js), a URL-mode client over
 * Streamable HTTP, round 1's URL elicitation, requests to a page on a non-localhost public URL, and
 * the enrolment of approvers for token principals (the second authorised by the first's passkey).
 */
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { Client, StreamableHTTPClientTransport, type InputRequiredResult } from '@modelcontextprotocol/client';
import { expect } from 'vitest';
import { assertionIn, rawRequest, type AuthPage } from './browser.js';
import type { Reply } from './harness.js';
import { enrolOnPage, type Enrolment } from './passkeyCli.js';

export { mintToken, writeSigningKey } from './tokens.js';

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

/**
 * A request to a page URL on a public host name (e.g. `approve.test`) from Node: sent to 127.0.0.1
 * with `Host: NAME:PORT` (unless `host` overrides it), exactly the given headers otherwise (no
 * Origin unless given); a POST with a JSON body when `body` is given, else a GET (unless `method`).
 */
export function pageRequest(
  pageUrl: string,
  options: { method?: string; origin?: string; host?: string; body?: unknown } = {},
): ReturnType<typeof rawRequest> {
  const u = new URL(pageUrl);
  const headers: Record<string, string> = { host: options.host ?? u.host };
  if (options.origin !== undefined) headers.origin = options.origin;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  return rawRequest(`http://127.0.0.1:${u.port}${u.pathname}`, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
}

/**
 * Opens `url` in the approver's tab, brought to the front first: Chromium refuses WebAuthn in a
 * document without focus, and each approver has a tab.
 */
export async function openInFront(page: AuthPage, url: string): Promise<void> {
  await page.page.bringToFront();
  await page.page.goto(url);
}

/** The arguments of `approvers enroll` for approver `name` of principal `sub` at `issuer`, on `publicUrl`. */
export function enrolArgs(
  approversPath: string,
  name: string,
  publicUrl: string,
  issuer: string,
  sub: string,
): string[] {
  return ['--approvers', approversPath, '--name', name, '--public-url', publicUrl, '--principal', issuer, sub];
}

/**
 * Enrols `page`'s authenticator on `enrolment`'s page when the approvers file already holds an
 * approver: `authoriser`'s passkey authorises the enrolment first (its options step is
 * `authenticate`), then `page` registers its own passkey.
 */
export async function enrolAuthorisedBy(authoriser: AuthPage, page: AuthPage, enrolment: Enrolment): Promise<void> {
  await openInFront(authoriser, enrolment.url);
  const origin = new URL(enrolment.url).origin;
  const step = await pageRequest(`${enrolment.url}/options`, { origin, body: {} });
  expect(JSON.parse(step.body).step).toBe('authenticate');
  const authorised = await pageRequest(`${enrolment.url}/authenticate`, {
    origin,
    body: await assertionIn(authoriser.page, JSON.parse(step.body).options),
  });
  expect(authorised.status, authorised.body).toBe(200);
  await enrolOnPage(page, enrolment, openInFront);
}
