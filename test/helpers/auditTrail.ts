/**
 * Test helpers for audit trails written by the built CLI (`mcp-confirm --audit`, `mcp-confirm proxy
 * --audit`): the CLI spawned by the test itself, so the test can end its stdin, signal it or kill it
 * and wait for its exit, with a real v2 SDK `Client` over its stdio (the SDK's own framing:
 * `ReadBuffer`, `serializeMessage`); the trail read back and checked by `mcp-confirm audit verify`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  Client,
  ReadBuffer,
  serializeMessage,
  type JSONRPCMessage,
  type Transport,
} from '@modelcontextprotocol/client';
import { MANUAL_CLIENT_OPTIONS } from './harness.js';
import { runProcess, type Finished } from './processes.js';

export const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

/** A client transport over the stdio of a child process the test spawned and controls. */
export class ChildTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #child: ChildProcess;
  readonly #buffer = new ReadBuffer();

  constructor(child: ChildProcess) {
    this.#child = child;
  }

  async start(): Promise<void> {
    this.#child.stdout!.on('data', (chunk: Buffer) => {
      this.#buffer.append(chunk);
      for (let message = this.#buffer.readMessage(); message !== null; message = this.#buffer.readMessage())
        this.onmessage?.(message);
    });
    this.#child.once('close', () => this.onclose?.());
    this.#child.stdin!.on('error', (e) => this.onerror?.(e));
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((res, rej) => {
      if (!this.#child.stdin!.writable) {
        rej(new Error('the server process is gone'));
        return;
      }
      this.#child.stdin!.write(serializeMessage(message), (e) => (e ? rej(e) : res()));
    });
  }

  /** Leaves the process running (the test ends it as the case needs). */
  async close(): Promise<void> {}
}

export interface AuditedProcess {
  client: Client;
  child: ChildProcess;
  /** The trail file the process named on stderr. */
  trail: string;
  stderr(): string;
  /** Resolves once the process has exited: its code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Ends stdin (the end of the conversation); resolves once the process has exited. */
  endInput(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal`; resolves once the process has exited. */
  stop(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `mcp-confirm …args` (which must include `--audit`), connects a real v2 client pinned to
 * 2026-07-28 driving the rounds by hand, and resolves once the trail file is named on stderr (its
 * own pipe: waited for by order, not by time).
 *
 * @param cleanups - where to push the process's cleanup (SIGKILL if still running).
 */
export async function startAudited(args: string[], cleanups: Array<() => Promise<unknown>>): Promise<AuditedProcess> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.once('exit', (code, signal) => res({ code, signal })),
  );
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  let err = '';
  const named = new Promise<string>((res, rej) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString('utf8');
      const m = /audit trail: (\S+\.jsonl)[ \n]/.exec(err);
      if (m) res(m[1]!);
    });
    void exited.then(() => rej(new Error(`mcp-confirm exited before naming its trail:\n${err}`)));
  });
  const client = new Client({ name: 'audit-trail-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(new ChildTransport(child));
  const trail = await named;
  return {
    client,
    child,
    trail,
    stderr: () => err,
    exited,
    endInput: () => {
      child.stdin!.end();
      return exited;
    },
    stop: (signal) => {
      child.kill(signal);
      return exited;
    },
  };
}

export type Line = Record<string, unknown>;

/** The trail's lines, parsed. */
export function linesOf(file: string): Line[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);
}

/** The trail's lines as text, without their newlines. */
export function textLinesOf(file: string): string[] {
  return readFileSync(file, 'utf8').split('\n').slice(0, -1);
}

/** `mcp-confirm audit verify FILE --key-file KEYS …extra`. */
export function verifyTrail(file: string, keyFile: string, extra: string[] = []): Promise<Finished> {
  return runProcess(process.execPath, [MAIN, 'audit', 'verify', file, '--key-file', keyFile, ...extra]);
}

/** The exact sentence `audit verify` gives an open trail (docs/audit.md). */
export const OPEN_SENTENCE =
  'is open (not closed: the server may still be running, or it stopped without closing, or the end was cut)';
