/**
 * Test helpers for `mcp-confirm --http`: the built CLI as a real subprocess on
 * a real `node:http` listener (port 0), and real clients of both eras over the
 * Streamable HTTP transport.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { resolve } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { PROCESS_DEADLINE_MS } from './deadlines.js';
import { MANUAL_CLIENT_OPTIONS } from './harness.js';

export const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

export interface HttpServerProcess {
  /** The MCP endpoint, e.g. `http://127.0.0.1:40123/mcp`. */
  url: URL;
  proc: ChildProcess;
  stderr(): string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
  /**
   * Resolves once stderr contains `text`: wait for a log line instead of reading {@link stderr}
   * right after an answer (stderr is its own pipe; the line may arrive after the answer, or after
   * the `exit` event). Rejects, naming the text and what stderr holds, when stderr ends without it
   * or after the generous {@link PROCESS_DEADLINE_MS} (a hang).
   */
  waitForStderr(text: string): Promise<void>;
}

/** Starts `mcp-confirm ...args` and waits for its "serving … at URL" line; rejects with its stderr if it exits first. */
export async function startHttpServer(args: string[]): Promise<HttpServerProcess> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  const proc = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  let ended = false;
  const waiters: Array<{ text: string; resolve: () => void; reject?: (e: Error) => void }> = [];
  proc.stderr!.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
    for (const w of waiters.splice(0)) {
      if (err.includes(w.text)) w.resolve();
      else waiters.push(w);
    }
  });
  const notSaid = (text: string, why: string): Error =>
    new Error(`mcp-confirm's stderr never said ${JSON.stringify(text)} (${why}): ${JSON.stringify(err)}`);
  proc.stderr!.once('close', () => {
    ended = true;
    for (const w of waiters.splice(0)) w.reject?.(notSaid(w.text, 'its stderr ended'));
  });
  const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
  const waitForStderr = (text: string): Promise<void> => {
    if (err.includes(text)) return Promise.resolve();
    if (ended) return Promise.reject(notSaid(text, 'its stderr ended'));
    return new Promise((res, rej) => {
      const timer = setTimeout(() => {
        const i = waiters.indexOf(waiter);
        if (i >= 0) waiters.splice(i, 1);
        rej(notSaid(text, `not in ${PROCESS_DEADLINE_MS} ms`));
      }, PROCESS_DEADLINE_MS);
      const waiter = {
        text,
        resolve: () => (clearTimeout(timer), res()),
        reject: (e: Error) => (clearTimeout(timer), rej(e)),
      };
      waiters.push(waiter);
    });
  };
  const url = await Promise.race([
    new Promise<URL>((res) => {
      const check = (): void => {
        const m = / at (http:\/\/\S+\/mcp);/.exec(err);
        if (m) res(new URL(m[1]!));
        else waiters.push({ text: '/mcp;', resolve: check });
      };
      check();
    }),
    exited.then((code) => {
      throw new Error(`mcp-confirm exited with ${String(code)} before serving:\n${err}`);
    }),
  ]);
  return { url, proc, stderr: () => err, exited, waitForStderr };
}

/**
 * Runs `mcp-confirm ...args` to completion: exit code and stderr, all of it (it resolves on `close`,
 * once stderr is read to its end, not on `exit`, when its last lines may still be in the pipe).
 */
export async function runCli(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const proc = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const code = await new Promise<number | null>((res) => proc.once('close', (c) => res(c)));
  return { code, stderr: err };
}

/** A v2 client pinned to 2026-07-28, driving rounds by hand, optionally with a bearer token. */
export async function connectModern(url: URL, token?: string): Promise<Client> {
  const client = new Client({ name: 'http-modern', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  const requestInit: RequestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : {};
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit }));
  return client;
}

/** A 2025-era v1 client (`initialize` handshake) declaring form elicitation; `answer` decides each elicitation. */
export async function connectLegacy(
  url: URL,
  answer: (message: string) => Promise<{ action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> }>,
  token?: string,
): Promise<{ client: V1Client; asked: string[]; transport: V1StreamableHTTPClientTransport }> {
  const client = new V1Client(
    { name: 'http-legacy', version: '0.0.0' },
    { capabilities: { elicitation: { form: {} } } },
  );
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    const message = (req.params as { message: string }).message;
    asked.push(message);
    return (await answer(message)) as never;
  });
  const requestInit: RequestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : {};
  const transport = new V1StreamableHTTPClientTransport(url, { requestInit });
  await client.connect(transport as never);
  return { client, asked, transport };
}

/** One raw HTTP request (node:http, so any Host header can be sent). */
export function rawRequest(
  url: URL,
  options: { method?: string; headers?: Record<string, string>; body?: string; path?: string },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((res, rej) => {
    const req = httpRequest(
      {
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port,
        path: options.path ?? url.pathname,
        method: options.method ?? 'POST',
        headers: options.headers ?? {},
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (c: string) => (body += c));
        response.on('end', () => res({ status: response.statusCode ?? 0, headers: response.headers, body }));
        response.on('error', rej);
      },
    );
    req.on('error', rej);
    req.end(options.body);
  });
}

/** A 2025-era `initialize` request body. */
export const LEGACY_INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
});

export const MCP_POST_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
