/**
 * What the passkey suites share about the built CLI (test/e2e/passkey.test.ts,
 * passkeyGrants.test.ts, passkeyHttp.test.ts, proxyPasskey.test.ts, proxyPasskeyHttp.test.ts):
 * starting `mcp-confirm approvers enroll` and enrolling a page's authenticator on its page; the
 * server over stdio with `--approval passkey` and a v2 client pinned to 2026-07-28; and round 1's
 * elicitation with the approval page's URL (URL mode, or inside a form's message).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Client, type InputRequiredResult } from '@modelcontextprotocol/client';
import { expect } from 'vitest';
import { outcomeOf, type AuthPage } from './browser.js';
import { callTool, type Reply } from './harness.js';
import { MAIN } from './httpServer.js';
import { InPlaceStdioTransport } from './processes.js';

/** An approval page's URL as a server over stdio prints it (`localhost`, any port). */
export const URL_RE = /http:\/\/localhost:[0-9]+\/approve\/[A-Za-z0-9_-]+/;
/** Round 2's answer of a URL-mode client. */
export const URL_ACCEPT = { confirm: { action: 'accept' } };
/** Round 2's answer of a form-mode client. */
export const FORM_ACCEPT = { confirm: { action: 'accept', content: { confirmed: true } } };

/** A running `approvers enroll`: its page URL (the first stdout line), and its exit with what it wrote to stderr. */
export interface Enrolment {
  url: string;
  exit: Promise<{ code: number | null; stderr: string }>;
}

/**
 * Starts `mcp-confirm approvers enroll ARGS…` (pushed onto `children`, for the suite to end);
 * resolves with its first stdout line (the URL), rejects when it exits before printing one.
 */
export function startEnrol(args: readonly string[], children: ChildProcess[]): Promise<Enrolment> {
  const child = spawn(process.execPath, [MAIN, 'approvers', 'enroll', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exit = new Promise<{ code: number | null; stderr: string }>((res) =>
    child.once('exit', (code) => res({ code, stderr })),
  );
  return new Promise((res, rej) => {
    createInterface({ input: child.stdout! }).once('line', (url) => res({ url, exit }));
    void exit.then((e) => rej(new Error(`enrol exited ${e.code} before printing a URL: ${e.stderr}`)));
  });
}

/**
 * Enrols the authenticator of `page` on the enrolment page of `enrolment`: opens it with `open`
 * (by default a plain `goto`), clicks Enrol, and expects "enrolled" and exit status 0.
 */
export async function enrolOnPage(
  page: AuthPage,
  enrolment: Enrolment,
  open: (page: AuthPage, url: string) => Promise<unknown> = (p, url) => p.page.goto(url),
): Promise<void> {
  await open(page, enrolment.url);
  await page.page.click('#enroll');
  expect(await outcomeOf(page.page)).toContain('enrolled');
  expect((await enrolment.exit).code).toBe(0);
}

/** A server over stdio with a v2 client connected: what it wrote to stderr so far, and `delete_file` calls. */
export interface PasskeyStdioServer {
  client: Client;
  stderr: () => string;
  call(path: string, extra?: { inputResponses?: unknown; requestState?: unknown }): Promise<Reply>;
}

/**
 * Starts `mcp-confirm --root ROOT --approval passkey --approvers APPROVERS --approval-wait WAIT
 * EXTRA…` over stdio and connects a v2 client named `name`, pinned to 2026-07-28, declaring URL
 * (default) or form elicitation, answering no round itself (pushed onto `clients`).
 *
 * @param options.wait - `--approval-wait` in seconds; defaults to 0.
 */
export async function startPasskeyStdio(
  options: {
    name: string;
    root: string;
    approvers: string;
    wait?: number;
    mode?: 'url' | 'form';
    extra?: readonly string[];
  },
  clients: Client[],
): Promise<PasskeyStdioServer> {
  const transport = new InPlaceStdioTransport({
    command: process.execPath,
    args: [
      MAIN,
      '--root',
      options.root,
      '--approval',
      'passkey',
      '--approvers',
      options.approvers,
      '--approval-wait',
      String(options.wait ?? 0),
      ...(options.extra ?? []),
    ],
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const client = new Client(
    { name: options.name, version: '0.0.0' },
    {
      capabilities: { elicitation: options.mode === 'form' ? { form: {} } : { url: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      inputRequired: { autoFulfill: false },
    },
  );
  await client.connect(transport);
  clients.push(client);
  return {
    client,
    stderr: () => err,
    call: (path, extra = {}) => callTool(client, { name: 'delete_file', arguments: { path }, ...extra }),
  };
}

/**
 * Round 1's elicitation (key `confirm`): its mode (`'form'` when it names none), the approval
 * page's URL (URL mode's `url`, or the first {@link URL_RE} match in a form's message), the
 * message and the state. Throws when the reply is not input_required or has no URL or state.
 */
export function pageElicitation(reply: Reply): { mode: string; url: string; message: string; state: string } {
  if (reply.kind !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(reply)}`);
  const entry = (reply.result as InputRequiredResult).inputRequests?.confirm as {
    params: { mode?: string; url?: string; message: string };
  };
  const url = entry.params.url ?? URL_RE.exec(entry.params.message)?.[0];
  if (url === undefined || reply.state === undefined) throw new Error(`no URL or state in ${JSON.stringify(reply)}`);
  return { mode: entry.params.mode ?? 'form', url, message: entry.params.message, state: reply.state };
}
