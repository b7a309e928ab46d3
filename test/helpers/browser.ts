/**
 * Real headless Chromium (Debian's `chromium`, driven by playwright-core) with a
 * WebAuthn virtual authenticator through the Chrome DevTools Protocol. A missing
 * `chromium` is a failure, never a skip: scripts/test.sh installs it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import { PROCESS_DEADLINE_MS } from './deadlines.js';

/** The chromium on PATH (Debian: /usr/bin/chromium). */
export function chromiumPath(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' })
      .trim()
      .split('\n')[0]!;
  } catch {
    throw new Error('chromium is not installed: apt-get install chromium (scripts/test.sh does it)');
  }
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/**
 * Launches headless Chromium with a fresh profile directory.
 *
 * @param extraArgs - more command-line switches, e.g. `--host-resolver-rules=MAP approve.test 127.0.0.1`
 *   and `--unsafely-treat-insecure-origin-as-secure=http://approve.test:PORT` for a non-localhost RP ID.
 */
export async function launchBrowser(extraArgs: readonly string[] = []): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'mcp-confirm-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    headless: true,
    viewport: { width: 900, height: 720 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extraArgs,
    ],
  });
  return {
    context,
    close: async () => {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A page with its own virtual authenticator (ctap2, internal, resident keys, user verification). */
export interface AuthPage {
  page: Page;
  cdp: CDPSession;
  authenticatorId: string;
  /** Whether the authenticator's user verification succeeds. */
  setUserVerified(verified: boolean): Promise<void>;
  /** The credentials the authenticator holds (CDP `WebAuthn.getCredentials`). */
  credentials(): Promise<
    Array<{
      credentialId: string;
      rpId?: string;
      privateKey: string;
      signCount: number;
      isResidentCredential: boolean;
      userHandle?: string;
    }>
  >;
}

export async function newAuthPage(browser: Browser, options: { isUserVerified?: boolean } = {}): Promise<AuthPage> {
  const page = await browser.context.newPage();
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: options.isUserVerified ?? true,
      automaticPresenceSimulation: true,
    },
  });
  return {
    page,
    cdp,
    authenticatorId,
    setUserVerified: async (verified) => {
      await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: verified });
    },
    credentials: async () => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials as never,
  };
}

/** Waits until `#outcome` has text (by order; bounded only by the generous process deadline), and returns it. */
export async function outcomeOf(page: Page): Promise<string> {
  const outcome = page.locator('#outcome');
  await outcome.filter({ hasText: /\S/ }).waitFor({ timeout: PROCESS_DEADLINE_MS });
  return (await outcome.textContent()) ?? '';
}

/** One raw HTTP request (node:http, so headers are exactly what is given: no Origin unless set). */
export function rawRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    if (options.body !== undefined) req.end(options.body);
    else req.end();
  });
}

/** POSTs JSON the way a page would, with the given Origin (or none). */
export function postJson(url: string, body: unknown, origin: string | undefined): ReturnType<typeof rawRequest> {
  return rawRequest(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(origin === undefined ? {} : { origin }) },
    body: JSON.stringify(body),
  });
}

/** A tiny "evil" site on another localhost port: a blank page, or one that frames `frameUrl`. */
export async function startEvilSite(): Promise<{ origin: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://localhost');
    const frame = u.searchParams.get('frame');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<!doctype html><title>evil</title><body>${frame ? `<iframe id="f" src="${frame.replace(/"/g, '&quot;')}" width="800" height="600"></iframe>` : 'evil'}</body>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    origin: `http://localhost:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // the browser keeps connections alive
      }),
  };
}

/** In the page: run navigator.credentials.get with JSON options, return the assertion as JSON. */
export async function assertionIn(page: Page, options: unknown): Promise<Record<string, unknown>> {
  // Runs in the browser (the test's tsconfig has no DOM types).
  return page.evaluate(async (o) => {
    const g = globalThis as unknown as {
      PublicKeyCredential: { parseRequestOptionsFromJSON(o: unknown): unknown };
      navigator: { credentials: { get(o: unknown): Promise<{ toJSON(): Record<string, unknown> }> } };
    };
    const publicKey = g.PublicKeyCredential.parseRequestOptionsFromJSON(o);
    const cred = await g.navigator.credentials.get({ publicKey });
    return cred.toJSON();
  }, options);
}
