/**
 * Passkey approval end to end: the built CLI as real subprocesses (enrolment and the
 * stdio server), a real v2 MCP Client pinned to 2026-07-28, and real headless Chromium
 * with a WebAuthn virtual authenticator (CDP). Every attack has its control.
 *
 * Over stdio every caller is the principal `local`; an approver allowed for principal U1
 * approving U2's call over HTTP is tested in passkeyHttp.test.ts.
 */
import type { ChildProcess } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, stderrSays, until } from '../helpers/processes.js';
import {
  assertionIn,
  launchBrowser,
  newAuthPage,
  outcomeOf,
  postJson,
  rawRequest,
  startEvilSite,
  type AuthPage,
  type Browser,
} from '../helpers/browser.js';
import { MAIN } from '../helpers/httpServer.js';
import {
  enrolOnPage,
  FORM_ACCEPT,
  pageElicitation as elicitation,
  startEnrol as startEnrolOf,
  startPasskeyStdio,
  URL_ACCEPT,
  URL_RE,
  type Enrolment,
  type PasskeyStdioServer as Served,
} from '../helpers/passkeyCli.js';

const DOCS = resolve(import.meta.dirname, '../../docs');
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

let dir: string;
let root: string;
let approversPath: string;
let browser: Browser;
let ann: AuthPage;
const children: ChildProcess[] = [];
const clients: Client[] = [];

/** Starts `mcp-confirm approvers enroll`; resolves with the first stdout line (the URL). */
const startEnrol = (args: string[]): Promise<Enrolment> => startEnrolOf(args, children);

async function enrolWith(page: AuthPage, args: string[]): Promise<void> {
  await enrolOnPage(page, await startEnrol(args));
}

/** The CLI server over stdio with --approval passkey, and a v2 client declaring URL or form elicitation. */
function startServer(options: { wait?: number; mode?: 'url' | 'form'; approvers?: string } = {}): Promise<Served> {
  return startPasskeyStdio(
    {
      name: 'passkey-test',
      root,
      approvers: options.approvers ?? approversPath,
      ...(options.wait === undefined ? {} : { wait: options.wait }),
      ...(options.mode === undefined ? {} : { mode: options.mode }),
    },
    clients,
  );
}

function file(name: string, content = 'data\n'): string {
  const p = join(root, name);
  writeFileSync(p, content);
  return p;
}

async function approveOnPage(page: AuthPage, url: string): Promise<string> {
  await page.page.goto(url);
  await page.page.click('#approve');
  return outcomeOf(page.page);
}

async function optionsFor(url: string): Promise<Record<string, unknown>> {
  const r = await postJson(`${url}/options`, {}, new URL(url).origin);
  expect(r.status).toBe(200);
  return (JSON.parse(r.body) as { options: Record<string, unknown> }).options;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-passkey-'));
  root = join(dir, 'root');
  mkdirSync(root);
  approversPath = join(dir, 'approvers.json');
  browser = await launchBrowser();
  ann = await newAuthPage(browser);
  await enrolWith(ann, ['--approvers', approversPath, '--name', 'ann']);
}, 180_000);

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  for (const c of children) if (c.exitCode === null) c.kill();
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('passkey approval over stdio (real Chromium, real CLI)', { timeout: 180_000 }, () => {
  it('enrolment wrote the approvers file with mode 0600, the public key only, principal local', async () => {
    expect(statSync(approversPath).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(readFileSync(approversPath, 'utf8')) as {
      rpId: string;
      approvers: Array<Record<string, unknown>>;
    };
    expect(saved.rpId).toBe('localhost');
    expect(saved.approvers.map((a) => [a.name, a.principals])).toEqual([['ann', ['local']]]);
    const [cred] = await ann.credentials();
    expect(Buffer.from(cred!.credentialId, 'base64').toString('base64url')).toBe(saved.approvers[0]!.credentialId);
    const text = readFileSync(approversPath, 'utf8');
    expect(text).not.toContain(cred!.privateKey);
    expect(text).not.toMatch(/private/i);
    const list = await runProcess(process.execPath, [MAIN, 'approvers', 'list', '--approvers', approversPath]);
    expect(list.status).toBe(0);
    expect(list.stdout).toMatch(/^ann\tcredential /);
  });

  it('approves on the page with the enrolled passkey through a URL-mode client: deleted once, the replay refused', async () => {
    const s = await startServer();
    const target = file('approve-me.txt');
    const e = elicitation(await s.call('approve-me.txt'));
    expect(e.mode).toBe('url');
    expect(e.url).toMatch(URL_RE);
    expect(e.message).toContain('approve-me.txt');
    expect(e.message).toContain('Open the link to approve or deny this on the approval page with your passkey.');
    // The page shows the audience, the principal, the tool, the question, each value uncut, the time left.
    const page = ann.page;
    const response = await page.goto(e.url);
    expect(response?.headers()['content-security-policy']).toBe(CSP);
    await expect(page.locator('#question').textContent()).resolves.toContain('approve-me.txt');
    const facts = (await page.locator('dl.facts').textContent()) ?? '';
    expect(facts).toContain('mcp-confirm');
    expect(facts).toContain('local');
    expect(facts).toContain('delete_file');
    expect(facts).toMatch(/[0-9]+ min [0-9]{2} s/);
    expect(await page.locator('#values').textContent()).toContain(target);
    mkdirSync(DOCS, { recursive: true });
    await page.screenshot({ path: join(DOCS, 'approval-page.png'), fullPage: true });
    await page.click('#approve');
    expect(await outcomeOf(page)).toContain('approved');
    expect(existsSync(target)).toBe(true); // the page only records; the retry acts
    const r2 = await s.call('approve-me.txt', { inputResponses: URL_ACCEPT, requestState: e.state });
    expect(r2).toMatchObject({ kind: 'result', isError: false });
    expect((r2 as { text: string }).text).toMatch(/^Deleted `.*approve-me\.txt` \(5 bytes\)\.$/);
    expect(existsSync(target)).toBe(false);
    file('approve-me.txt');
    const replay = await s.call('approve-me.txt', { inputResponses: URL_ACCEPT, requestState: e.state });
    expect((replay as { text: string }).text).toMatch(/^\[ERR_CONFIRM_SPENT\]/);
    expect(existsSync(target)).toBe(true);
    await stderrSays(s.stderr, 'approved by ann');
  });

  it('the page shows a hostile, long name uncut and escaped: no markup, no raw bidi control, no cut', async () => {
    const s = await startServer();
    const name = `<img id="inj" src=x>-${'long-'.repeat(40)}\u202Eevil.txt`;
    file(name);
    const e = elicitation(await s.call(name));
    expect(e.message).toContain('…'); // the question itself is cut …
    await ann.page.goto(e.url);
    const values = (await ann.page.locator('#values').textContent()) ?? '';
    expect(values).toContain(`<img id="inj" src=x>-${'long-'.repeat(40)}⟨U+202E⟩evil.txt`); // … the page is not
    expect(values).not.toContain('\u202E');
    expect(await ann.page.locator('#inj').count()).toBe(0);
    await ann.page.click('#deny');
    expect(await outcomeOf(ann.page)).toContain('denied');
  });

  it('deny on the page keeps the file: "You declined; nothing was deleted."', async () => {
    const s = await startServer();
    const target = file('deny-me.txt');
    const e = elicitation(await s.call('deny-me.txt'));
    await ann.page.goto(e.url);
    await ann.page.click('#deny');
    expect(await outcomeOf(ann.page)).toContain('denied');
    const r2 = await s.call('deny-me.txt', { inputResponses: URL_ACCEPT, requestState: e.state });
    expect(r2).toMatchObject({ kind: 'result', isError: false, text: 'You declined; nothing was deleted.' });
    expect(existsSync(target)).toBe(true);
    // The log says where the human declined (the client's own answer was accept).
    await until(() => s.stderr().includes('delete_file not confirmed (decline on the approval page)'));
  });

  it('round 2 sent before the approval waits for the page and deletes once it is approved (order: approve clicked, then the answer)', async () => {
    const s = await startServer({ wait: 600 });
    const target = file('wait-for-me.txt');
    const e = elicitation(await s.call('wait-for-me.txt'));
    const order: string[] = [];
    const r2 = s.call('wait-for-me.txt', { inputResponses: URL_ACCEPT, requestState: e.state }).then((r) => {
      order.push('round 2 answered');
      return r;
    });
    await ann.page.goto(e.url);
    order.push('approve clicked');
    await ann.page.click('#approve');
    expect(await outcomeOf(ann.page)).toContain('approved');
    const reply = await r2;
    // Round 2 was sent first and answered only after the human approved.
    expect(order).toEqual(['approve clicked', 'round 2 answered']);
    expect((reply as { text: string }).text).toMatch(/^Deleted /);
    expect(existsSync(target)).toBe(false);
  });

  it('attack: round 2 before approval is asked again with the same URL and state, nothing spent, never deleted; control: approved, it deletes', async () => {
    const s = await startServer();
    const target = file('early.txt');
    const e = elicitation(await s.call('early.txt'));
    for (let i = 0; i < 3; i++) {
      const again = elicitation(await s.call('early.txt', { inputResponses: URL_ACCEPT, requestState: e.state }));
      expect(again.url).toBe(e.url);
      expect(again.state).toBe(e.state);
      expect(existsSync(target)).toBe(true);
    }
    expect(await approveOnPage(ann, e.url)).toContain('approved');
    const r2 = await s.call('early.txt', { inputResponses: URL_ACCEPT, requestState: e.state });
    expect((r2 as { text: string }).text).toMatch(/^Deleted /);
  });

  it('attack: a form-only client accepting before the passkey approval is asked again; control: after it, deleted', async () => {
    const s = await startServer({ mode: 'form' });
    const target = file('form.txt');
    const e = elicitation(await s.call('form.txt'));
    expect(e.mode).toBe('form');
    expect(e.message).toContain(`Approval page: \`${e.url}\``);
    expect(e.message).toContain('Approve on that page with your passkey, then confirm here.');
    const before = elicitation(await s.call('form.txt', { inputResponses: FORM_ACCEPT, requestState: e.state }));
    expect(before.url).toBe(e.url);
    expect(existsSync(target)).toBe(true);
    expect(await approveOnPage(ann, e.url)).toContain('approved');
    const after = await s.call('form.txt', { inputResponses: FORM_ACCEPT, requestState: e.state });
    expect((after as { text: string }).text).toMatch(/^Deleted /);
    expect(existsSync(target)).toBe(false);
  });

  it('attack: the client fetches the page and POSTs an approval itself without an assertion: nothing approved; control: the passkey approves', async () => {
    const s = await startServer();
    const target = file('self-approve.txt');
    const e = elicitation(await s.call('self-approve.txt'));
    const origin = new URL(e.url).origin;
    // GET changes nothing, and carries the headers.
    for (let i = 0; i < 2; i++) {
      const got = await rawRequest(e.url);
      expect(got.status).toBe(200);
      expect(got.body).toContain('id="approve"');
      expect(got.headers['content-security-policy']).toBe(CSP);
      expect(got.headers['cache-control']).toBe('no-store');
      expect(got.headers['referrer-policy']).toBe('no-referrer');
      expect(got.headers['x-content-type-options']).toBe('nosniff');
    }
    const options = await optionsFor(e.url);
    const fakeClientData = Buffer.from(
      JSON.stringify({ type: 'webauthn.get', challenge: options.challenge, origin }),
    ).toString('base64url');
    const [cred] = await ann.credentials();
    const forged = {
      id: Buffer.from(cred!.credentialId, 'base64').toString('base64url'),
      rawId: Buffer.from(cred!.credentialId, 'base64').toString('base64url'),
      type: 'public-key',
      response: {
        clientDataJSON: fakeClientData,
        authenticatorData: Buffer.alloc(37).toString('base64url'),
        signature: Buffer.alloc(64).toString('base64url'),
      },
      clientExtensionResults: {},
    };
    for (const body of [{}, { approved: true }, forged]) {
      const r = await postJson(`${e.url}/assertion`, body, origin);
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(JSON.parse(r.body)).toMatchObject({ outcome: 'refused' });
    }
    const again = elicitation(await s.call('self-approve.txt', { inputResponses: URL_ACCEPT, requestState: e.state }));
    expect(again.url).toBe(e.url);
    expect(existsSync(target)).toBe(true);
    expect(await approveOnPage(ann, e.url)).toContain('approved');
    expect(
      ((await s.call('self-approve.txt', { inputResponses: URL_ACCEPT, requestState: e.state })) as { text: string })
        .text,
    ).toMatch(/^Deleted /);
  });

  it('attack: a forged assertion whose clientDataJSON origin holds a line break and ANSI escapes cannot write a line to stderr (the library reason is rendered); control: the passkey approves', async () => {
    const s = await startServer();
    file('log-forge.txt');
    const e = elicitation(await s.call('log-forge.txt'));
    const origin = new URL(e.url).origin;
    const options = await optionsFor(e.url);
    const forgedLine = 'mcp-confirm: approval page: approved by mallory';
    const evilOrigin = `x"\n\u001b[32m${forgedLine}\u001b[0m\n`;
    const [cred] = await ann.credentials();
    const id = Buffer.from(cred!.credentialId, 'base64').toString('base64url');
    const forged = {
      id,
      rawId: id,
      type: 'public-key',
      response: {
        clientDataJSON: Buffer.from(
          JSON.stringify({ type: 'webauthn.get', challenge: options.challenge, origin: evilOrigin }),
        ).toString('base64url'),
        authenticatorData: Buffer.alloc(37).toString('base64url'),
        signature: Buffer.alloc(64).toString('base64url'),
      },
      clientExtensionResults: {},
    };
    const r = await postJson(`${e.url}/assertion`, forged, origin);
    expect(r.status).toBe(403);
    expect(r.body).not.toContain('\u001b');
    await stderrSays(s.stderr, 'approval page: refused: the passkey assertion did not verify');
    const lines = s.stderr().split('\n');
    expect(lines.some((l) => l.startsWith(forgedLine) || l.includes(`\u001b[32m${forgedLine}`))).toBe(false);
    expect(s.stderr()).not.toContain('\u001b');
    // Control: the enrolled passkey approves, and its line is the only approval line.
    expect(await approveOnPage(ann, e.url)).toContain('approved');
    expect(
      ((await s.call('log-forge.txt', { inputResponses: URL_ACCEPT, requestState: e.state })) as { text: string }).text,
    ).toMatch(/^Deleted /);
    await stderrSays(s.stderr, 'confirmed and done (approved by ann)'); // written after the page's line
    expect(
      s
        .stderr()
        .split('\n')
        .filter((l) => l.includes('approval page: approved by')),
    ).toEqual(['mcp-confirm: approval page: approved by ann']);
  });

  it('attack: an assertion from an authenticator that was never enrolled is refused; control: the enrolled one approves', async () => {
    const s = await startServer();
    const target = file('stranger.txt');
    const e = elicitation(await s.call('stranger.txt'));
    const mallory = await newAuthPage(browser);
    await mallory.page.goto(e.url);
    // Mallory makes her own passkey for RP ID localhost, then answers a challenge of this approval with it.
    await mallory.page.evaluate(async () => {
      const g = globalThis as unknown as { navigator: { credentials: { create(o: unknown): Promise<unknown> } } };
      await g.navigator.credentials.create({
        publicKey: {
          rp: { id: 'localhost', name: 'mallory' },
          user: { id: new Uint8Array([1, 2, 3]), name: 'mallory', displayName: 'mallory' },
          challenge: new Uint8Array(32),
          pubKeyCredParams: [{ type: 'public-key', alg: -7 }],
          authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
        },
      });
    });
    const options = { ...(await optionsFor(e.url)), allowCredentials: [] };
    const assertion = await assertionIn(mallory.page, options);
    const r = await postJson(`${e.url}/assertion`, assertion, new URL(e.url).origin);
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).message).toContain('not an approver');
    // Through the page itself, her authenticator has no enrolled credential to offer.
    await mallory.page.goto(e.url);
    await mallory.page.click('#approve');
    expect(await outcomeOf(mallory.page)).toContain('refused');
    await mallory.page.close();
    expect(elicitation(await s.call('stranger.txt', { inputResponses: URL_ACCEPT, requestState: e.state })).url).toBe(
      e.url,
    );
    expect(existsSync(target)).toBe(true);
    expect(await approveOnPage(ann, e.url)).toContain('approved');
    expect(
      ((await s.call('stranger.txt', { inputResponses: URL_ACCEPT, requestState: e.state })) as { text: string }).text,
    ).toMatch(/^Deleted /);
  });

  it('a browser whose authenticator holds no passkey enrolled here is told what that most likely means (use the device you enrolled, or enrol this one), naming no approver; nothing is deleted; control: the enrolled passkey approves on the same page', async () => {
    const s = await startServer();
    const target = file('no-passkey.txt');
    const e = elicitation(await s.call('no-passkey.txt'));
    // Another browser's authenticator: it holds no credential at all.
    const elsewhere = await newAuthPage(browser);
    try {
      expect(await elsewhere.credentials()).toEqual([]);
      await elsewhere.page.goto(e.url);
      await elsewhere.page.click('#approve');
      const said = await outcomeOf(elsewhere.page);
      expect(said).toBe(
        'refused: the passkey gave no answer (NotAllowedError): this browser or device may have no passkey enrolled for this server: use the device you enrolled, or enrol this one (or the prompt was cancelled, timed out or could not verify you); nothing was approved',
      );
      // The page names no approver (anyone holding the link can read it).
      expect(await elsewhere.page.locator('body').textContent()).not.toMatch(/\bann\b/);
      mkdirSync(DOCS, { recursive: true });
      await elsewhere.page.screenshot({ path: join(DOCS, 'approval-page-no-passkey.png'), fullPage: true });
    } finally {
      await elsewhere.page.close();
    }
    // Still pending: the retry is asked again with the same link, and the file is there.
    expect(elicitation(await s.call('no-passkey.txt', { inputResponses: URL_ACCEPT, requestState: e.state })).url).toBe(
      e.url,
    );
    expect(existsSync(target)).toBe(true);
    // Control: the enrolled passkey, on its own device, approves the same approval; the retry deletes once.
    expect(await approveOnPage(ann, e.url)).toContain('approved by ann');
    expect(
      ((await s.call('no-passkey.txt', { inputResponses: URL_ACCEPT, requestState: e.state })) as { text: string })
        .text,
    ).toMatch(/^Deleted /);
    expect(existsSync(target)).toBe(false);
  });

  it('attack: isUserVerified false: the browser refuses, and an assertion without user verification is refused by the server; control: verified, it approves', async () => {
    const s = await startServer();
    const target = file('unverified.txt');
    const e = elicitation(await s.call('unverified.txt'));
    await ann.setUserVerified(false);
    try {
      expect(await approveOnPage(ann, e.url)).toContain('refused');
      // Ask the authenticator without requiring verification: it signs with UV = 0; the server requires it.
      await ann.page.goto(e.url);
      const options = { ...(await optionsFor(e.url)), userVerification: 'discouraged' };
      const assertion = await assertionIn(ann.page, options);
      const r = await postJson(`${e.url}/assertion`, assertion, new URL(e.url).origin);
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body).message).toMatch(/verif/i);
    } finally {
      await ann.setUserVerified(true);
    }
    expect(elicitation(await s.call('unverified.txt', { inputResponses: URL_ACCEPT, requestState: e.state })).url).toBe(
      e.url,
    );
    expect(existsSync(target)).toBe(true);
    expect(await approveOnPage(ann, e.url)).toContain('approved');
    expect(
      ((await s.call('unverified.txt', { inputResponses: URL_ACCEPT, requestState: e.state })) as { text: string })
        .text,
    ).toMatch(/^Deleted /);
  });

  it('attack: a captured assertion POSTed again, to the same id or another, is refused; control: the first POST approved its own call', async () => {
    const s = await startServer();
    const first = file('captured-1.txt');
    const second = file('captured-2.txt');
    const e1 = elicitation(await s.call('captured-1.txt'));
    const e2 = elicitation(await s.call('captured-2.txt'));
    let captured: string | undefined;
    const onRequest = (req: { url(): string; postData(): string | null }): void => {
      if (req.url().endsWith('/assertion')) captured = req.postData() ?? undefined;
    };
    ann.page.on('request', onRequest);
    expect(await approveOnPage(ann, e1.url)).toContain('approved');
    ann.page.off('request', onRequest);
    expect(captured).toBeDefined();
    const origin = new URL(e1.url).origin;
    const replaySame = await postJson(`${e1.url}/assertion`, JSON.parse(captured!), origin);
    expect(replaySame.status).toBe(403);
    const replayOther = await postJson(`${e2.url}/assertion`, JSON.parse(captured!), origin);
    expect(replayOther.status).toBe(403);
    expect(
      elicitation(await s.call('captured-2.txt', { inputResponses: URL_ACCEPT, requestState: e2.state })).url,
    ).toBe(e2.url);
    expect(existsSync(second)).toBe(true);
    expect(
      ((await s.call('captured-1.txt', { inputResponses: URL_ACCEPT, requestState: e1.state })) as { text: string })
        .text,
    ).toMatch(/^Deleted /);
    expect(existsSync(first)).toBe(false);
  });

  it('attack: an assertion made for one id POSTed to another is refused; control: the same assertion at its own id approves', async () => {
    const s = await startServer();
    const a = file('id-a.txt');
    const b = file('id-b.txt');
    const ea = elicitation(await s.call('id-a.txt'));
    const eb = elicitation(await s.call('id-b.txt'));
    await ann.page.goto(ea.url);
    const assertion = await assertionIn(ann.page, await optionsFor(ea.url));
    const origin = new URL(ea.url).origin;
    const wrong = await postJson(`${eb.url}/assertion`, assertion, origin);
    expect(wrong.status).toBe(403);
    expect(JSON.parse(wrong.body).message).toContain('not made for this approval');
    expect(elicitation(await s.call('id-b.txt', { inputResponses: URL_ACCEPT, requestState: eb.state })).url).toBe(
      eb.url,
    );
    expect(existsSync(b)).toBe(true);
    // The challenge was taken by the wrong POST: the control asks a fresh one for A.
    const again = await assertionIn(ann.page, await optionsFor(ea.url));
    const right = await postJson(`${ea.url}/assertion`, again, origin);
    expect(right.status).toBe(200);
    expect(
      ((await s.call('id-a.txt', { inputResponses: URL_ACCEPT, requestState: ea.state })) as { text: string }).text,
    ).toMatch(/^Deleted /);
    expect(existsSync(a)).toBe(false);
  });

  it('attack: an assertion made by a page on another port of localhost (same RP ID) is refused; control: made on the approval page, it approves', async () => {
    const evil = await startEvilSite();
    try {
      const s = await startServer();
      const target = file('other-port.txt');
      const e = elicitation(await s.call('other-port.txt'));
      const origin = new URL(e.url).origin;
      await ann.page.goto(evil.origin);
      const foreign = await assertionIn(ann.page, await optionsFor(e.url));
      const r = await postJson(`${e.url}/assertion`, foreign, origin);
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body).message).toMatch(/origin/i);
      expect(existsSync(target)).toBe(true);
      await ann.page.goto(e.url);
      const own = await assertionIn(ann.page, await optionsFor(e.url));
      expect((await postJson(`${e.url}/assertion`, own, origin)).status).toBe(200);
      expect(
        ((await s.call('other-port.txt', { inputResponses: URL_ACCEPT, requestState: e.state })) as { text: string })
          .text,
      ).toMatch(/^Deleted /);
    } finally {
      await evil.close();
    }
  });

  it('attack: a POST without Origin or with a foreign Origin is refused; control: from the page origin it is taken', async () => {
    const s = await startServer();
    const target = file('origin.txt');
    const e = elicitation(await s.call('origin.txt'));
    for (const origin of [undefined, 'http://localhost:1', 'null', 'http://127.0.0.1:' + new URL(e.url).port]) {
      for (const action of ['options', 'deny', 'assertion']) {
        const r = await postJson(`${e.url}/${action}`, {}, origin);
        expect(r.status).toBe(403);
      }
    }
    expect((await rawRequest(e.url)).body).toContain('id="approve"'); // still pending
    const denied = await postJson(`${e.url}/deny`, {}, new URL(e.url).origin);
    expect(denied.status).toBe(200);
    expect(
      ((await s.call('origin.txt', { inputResponses: URL_ACCEPT, requestState: e.state })) as { text: string }).text,
    ).toBe('You declined; nothing was deleted.');
    expect(existsSync(target)).toBe(true);
  });

  it('attack: the page in a cross-origin frame is not rendered; control: opened directly, it is', async () => {
    const evil = await startEvilSite();
    try {
      const s = await startServer();
      file('framed.txt');
      const e = elicitation(await s.call('framed.txt'));
      const page = ann.page;
      await page.goto(`${evil.origin}/?frame=${encodeURIComponent(e.url)}`);
      await page.locator('#f').waitFor();
      const frame = page.frames().find((f) => f !== page.mainFrame());
      expect(frame).toBeDefined();
      await frame!.waitForLoadState();
      expect(await frame!.locator('#approve').count()).toBe(0);
      expect(await frame!.locator('#question').count()).toBe(0);
      // Control for the frame itself: a frame this site may show does render here.
      await page.goto(`${evil.origin}/?frame=${encodeURIComponent(evil.origin + '/inner')}`);
      await page.locator('#f').waitFor();
      const inner = page.frames().find((f) => f !== page.mainFrame());
      await inner!.waitForLoadState();
      expect(await inner!.locator('body').textContent()).toContain('evil');
      // Control for the page: opened directly, it renders.
      await page.goto(e.url);
      expect(await page.locator('#approve').count()).toBe(1);
    } finally {
      await evil.close();
    }
  });

  it('attack: an already-decided or unknown id approves nothing; control: a pending one offers a challenge', async () => {
    const s = await startServer();
    file('decided.txt');
    const e = elicitation(await s.call('decided.txt'));
    const origin = new URL(e.url).origin;
    expect((await postJson(`${e.url}/options`, {}, origin)).status).toBe(200);
    expect((await postJson(`${e.url}/deny`, {}, origin)).status).toBe(200);
    const after = await postJson(`${e.url}/options`, {}, origin);
    expect(after.status).toBe(409);
    await ann.page.goto(e.url);
    expect(await outcomeOf(ann.page)).toContain('denied');
    expect(await ann.page.locator('#approve').count()).toBe(0);
    const unknown = `${origin}/approve/${'A'.repeat(32)}`;
    expect((await postJson(`${unknown}/options`, {}, origin)).status).toBe(404);
    await ann.page.goto(unknown);
    expect(await outcomeOf(ann.page)).toContain('expired');
  });

  it('refuses at start-up (exit 2, naming it) an approvers file missing, empty, inside a root, or writable by group or others', async () => {
    const start = (path: string) =>
      runProcess(process.execPath, [MAIN, '--root', root, '--approval', 'passkey', '--approvers', path]);
    const missing = join(dir, 'none.json');
    const empty = join(dir, 'empty.json');
    writeFileSync(empty, JSON.stringify({ version: 1, rpId: 'localhost', approvers: [] }), { mode: 0o600 });
    const inside = join(root, 'approvers.json');
    copyFileSync(approversPath, inside);
    chmodSync(inside, 0o600);
    const loose = join(dir, 'loose.json');
    copyFileSync(approversPath, loose);
    chmodSync(loose, 0o620);
    for (const [path, why] of [
      [missing, 'does not exist'],
      [empty, 'holds no approver'],
      [inside, 'inside the root'],
      [loose, 'writable by group or others'],
    ] as const) {
      const r = await start(path);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(path);
      expect(r.stderr).toContain(why);
    }
    rmSync(inside);
    // Control: the enrolled file starts (stdin closed: it serves, then stops with status 0).
    const ok = await start(approversPath);
    expect(ok.stderr).toContain('approval passkey, page on http://localhost:');
    expect(ok.status).toBe(0);
  });

  it("warns at start-up when no approver may approve this server's calls (only token principals in the file, served over stdio), naming what they are enrolled for; control: the file enrolled for local starts without the warning", async () => {
    const start = (path: string) =>
      runProcess(process.execPath, [MAIN, '--root', root, '--approval', 'passkey', '--approvers', path]);
    const file = JSON.parse(readFileSync(approversPath, 'utf8')) as { approvers: Array<{ principals: string[] }> };
    for (const a of file.approvers) a.principals = [JSON.stringify(['jwt', 'https://auth.example.com/', 'alice'])];
    const tokenOnly = join(dir, 'token-only.json');
    writeFileSync(tokenOnly, JSON.stringify(file), { mode: 0o600 });
    chmodSync(tokenOnly, 0o600);
    const r = await start(tokenOnly);
    expect(r.status).toBe(0); // it serves: the file is well-formed, just of no use here
    expect(r.stderr).toContain(
      "warning: --approvers: no approver may approve calls here: this server's calls have the principal local (no tokens)",
    );
    expect(r.stderr).toContain('alice (issuer https://auth.example.com/)');
    const ok = await start(approversPath);
    expect(ok.status).toBe(0);
    expect(ok.stderr).toContain('approval passkey, page on http://localhost:');
    expect(ok.stderr).not.toContain('no approver may approve');
  });

  it('refuses an enrolment whose --name exists unless --replace', async () => {
    const r = await runProcess(process.execPath, [
      MAIN,
      'approvers',
      'enroll',
      '--approvers',
      approversPath,
      '--name',
      'ann',
      '--timeout',
      '5',
    ]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('already exists');
    const replacing = await startEnrol([
      '--approvers',
      approversPath,
      '--name',
      'ann',
      '--replace',
      '--timeout',
      '600',
    ]);
    expect(replacing.url).toMatch(/^http:\/\/localhost:[0-9]+\/enroll\/[A-Za-z0-9_-]+$/);
    children.at(-1)!.kill();
    await replacing.exit;
  });

  it('attack: a second enrolment without an existing approver passkey, or without the URL secret, is refused; control: with both, saved', async () => {
    const second = join(dir, 'approvers-second.json');
    copyFileSync(approversPath, second);
    chmodSync(second, 0o600);
    const e = await startEnrol(['--approvers', second, '--name', 'bob', '--timeout', '600']);
    const origin = new URL(e.url).origin;
    // Without the secret: nothing. The near miss changes the secret's last character to another
    // one (a fixed 'x' was the secret itself whenever the random secret ended in 'x': 1 run in 64).
    const secret = new URL(e.url).pathname.split('/')[2]!;
    const nearMiss = `${secret.slice(0, -1)}${secret.endsWith('x') ? 'y' : 'x'}`;
    expect(nearMiss).not.toBe(secret);
    for (const path of ['/enroll/', '/enroll/wrong-secret', `/enroll/${nearMiss}`]) {
      const r = await rawRequest(origin + path);
      expect(r.status).toBe(404);
      expect(r.body).not.toContain('id="enroll"');
    }
    expect((await postJson(`${origin}/enroll/wrong-secret/options`, {}, origin)).status).toBe(404);
    // With the secret but without an existing approver: the page asks for one first; registering directly is refused.
    const options = await postJson(`${e.url}/options`, {}, origin);
    expect(JSON.parse(options.body).step).toBe('authenticate');
    const direct = await postJson(
      `${e.url}/register`,
      { id: 'x', response: { clientDataJSON: Buffer.from('{}').toString('base64url') } },
      origin,
    );
    expect(direct.status).toBeGreaterThanOrEqual(400);
    const stranger = await newAuthPage(browser);
    await stranger.page.goto(e.url);
    expect(await stranger.page.locator('button#enroll').count()).toBe(1);
    await stranger.page.click('#enroll');
    expect(await outcomeOf(stranger.page)).toContain(
      "refused: the passkey gave no answer (NotAllowedError): this browser or device may have no enrolled approver's passkey for this server: authorise the enrolment on a device enrolled here",
    );
    await stranger.page.close();
    expect((JSON.parse(readFileSync(second, 'utf8')) as { approvers: unknown[] }).approvers).toHaveLength(1);
    // Control: ann's passkey authorises, then the new passkey is saved.
    await ann.page.goto(e.url);
    await ann.page.click('#enroll');
    expect(await outcomeOf(ann.page)).toContain('enrolled');
    expect((await e.exit).code).toBe(0);
    const names = (JSON.parse(readFileSync(second, 'utf8')) as { approvers: Array<{ name: string }> }).approvers.map(
      (a) => a.name,
    );
    expect(names).toEqual(['ann', 'bob']);
    expect(statSync(second).mode & 0o777).toBe(0o600);
    // approvers list and remove.
    const cli = (...args: string[]) =>
      runProcess(process.execPath, [MAIN, 'approvers', ...args, '--approvers', second]);
    expect(
      (await cli('list')).stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]),
    ).toEqual(['ann', 'bob']);
    const missing = await cli('remove', '--name', 'carol');
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('no approver named "carol"');
    expect((await cli('remove', '--name', 'bob')).status).toBe(0);
    expect(
      (await cli('list')).stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]),
    ).toEqual(['ann']);
    expect(statSync(second).mode & 0o777).toBe(0o600);
  });

  it('refuses to start (exit 2, naming the address) when the approval port is taken on 127.0.0.1 or on ::1; control: a free port starts', async () => {
    const hold = (host: string, port = 0) =>
      new Promise<TcpServer>((res, rej) => {
        const srv = createTcpServer();
        srv.once('error', rej);
        srv.listen({ host, port, ipv6Only: host === '::1' }, () => res(srv));
      });
    const start = (port: number) =>
      runProcess(process.execPath, [
        MAIN,
        '--root',
        root,
        '--approval',
        'passkey',
        '--approvers',
        approversPath,
        '--approval-port',
        String(port),
      ]);
    for (const host of ['127.0.0.1', '::1']) {
      const held = await hold(host);
      const port = (held.address() as { port: number }).port;
      try {
        const r = await start(port);
        expect(r.status).toBe(2);
        expect(r.stderr).toContain(
          `cannot listen on ${host === '::1' ? `[::1]:${port}` : `127.0.0.1:${port}`}: EADDRINUSE`,
        );
      } finally {
        await new Promise((r) => held.close(r));
      }
      const ok = await start(port);
      expect(ok.stderr).toContain(`page on http://localhost:${port}`);
      expect(ok.status).toBe(0);
    }
  });

  it('refuses bad passkey options with exit 2 and a message naming them', async () => {
    const run = (...args: string[]) => runProcess(process.execPath, [MAIN, ...args]);
    for (const [args, says] of [
      [['--root', root, '--approval', 'passkey'], '--approval passkey needs --approvers PATH'],
      [['--root', root, '--approvers', approversPath], 'need --approval passkey'],
      [['--root', root, '--approval', 'yes'], '--approval must be form or passkey'],
      [
        ['--root', root, '--approval', 'passkey', '--approvers', approversPath, '--approval-wait', '-1'],
        '--approval-wait',
      ],
      [
        ['--root', root, '--approval', 'passkey', '--approvers', approversPath, '--approval-port', '70000'],
        '--approval-port',
      ],
      [['approvers', 'enroll', '--name', 'x'], 'approvers needs --approvers PATH'],
      [['approvers', 'enroll', '--approvers', approversPath], 'approvers enroll needs --name NAME'],
      [
        ['approvers', 'enroll', '--approvers', approversPath, '--name', ' ann'],
        '--name: an approver name is 1 to 64 letters',
      ],
      [['approvers', 'wipe', '--approvers', approversPath], 'approvers takes enroll, list or remove'],
      [
        ['approvers', 'enroll', '--approvers', join(dir, 'no-such-dir', 'approvers.json'), '--name', 'x'],
        'does not exist or is not writable',
      ],
      [['approvers', 'list', '--approvers', join(dir, 'no-such-file.json')], 'does not exist'],
    ] as const) {
      const r = await run(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(says);
    }
  });
});
