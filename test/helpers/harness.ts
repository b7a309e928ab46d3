/**
 * Test harness: real SDK clients against servers served by `serveStdio`
 * (in-memory transport), pinned to protocol 2026-07-28, or the 2025-era v1 client.
 */
import {
  Client,
  InMemoryTransport,
  ProtocolError,
  type CallToolResult,
  type InputRequiredResult,
} from '@modelcontextprotocol/client';
import type { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export type Reply =
  | { kind: 'result'; result: CallToolResult; text: string; isError: boolean }
  | { kind: 'input_required'; result: InputRequiredResult; state: string | undefined; message: string | undefined }
  | { kind: 'error'; code: number; message: string; data: unknown };

/**
 * Options of a v2 Client that drives the rounds by hand: pinned to protocol 2026-07-28,
 * declaring form elicitation, not auto-fulfilling `input_required`.
 */
export const MANUAL_CLIENT_OPTIONS = {
  capabilities: { elicitation: { form: {} } },
  versionNegotiation: { mode: { pin: '2026-07-28' } },
  inputRequired: { autoFulfill: false },
} as const;

export const ACCEPT = { confirm: { action: 'accept', content: { confirmed: true } } } as const;

export function textOf(result: CallToolResult): string {
  return (result.content ?? []).map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join(' ');
}

/** The elicitation message of an input_required result's `confirm` entry. */
export function messageOf(result: InputRequiredResult): string | undefined {
  const entry = result.inputRequests?.confirm as { params?: { message?: string }; message?: string } | undefined;
  return entry?.params?.message ?? entry?.message;
}

export interface Connected {
  client: Client;
  /** One manual tools/call round; never throws for protocol errors. */
  call(name: string, args: unknown, extra?: { inputResponses?: unknown; requestState?: unknown }): Promise<Reply>;
  close(): Promise<void>;
}

/**
 * Connects a real v2 `Client` pinned to 2026-07-28 to `serveStdio(factory)` over the in-memory transport.
 *
 * @param options.elicitation - declare the form elicitation capability. Defaults to true.
 * @param options.autoFulfill - let the client answer rounds itself. Defaults to false (manual rounds).
 */
export async function connect(
  factory: () => McpServer,
  options: { elicitation?: boolean; autoFulfill?: boolean; onerror?: (e: Error) => void } = {},
): Promise<Connected> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const handle = serveStdio(factory, { transport: serverSide, onerror: options.onerror ?? (() => {}) });
  const client = new Client(
    { name: 'test-client', version: '0.0.0' },
    {
      capabilities: options.elicitation === false ? {} : { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      inputRequired: { autoFulfill: options.autoFulfill ?? false },
    },
  );
  await client.connect(clientSide);
  return {
    client,
    call: (name, args, extra = {}) => callTool(client, { name, arguments: args, ...extra }),
    close: async () => {
      await client.close().catch(() => {});
      await handle.close().catch(() => {});
    },
  };
}

/** One `tools/call` request, returned as a {@link Reply}; `timeoutMs` replaces the SDK's default request timeout (60 s). */
export async function callTool(
  client: Client,
  params: Record<string, unknown>,
  options: { timeoutMs?: number } = {},
): Promise<Reply> {
  try {
    const r = (await client.request(
      { method: 'tools/call', params } as never,
      { allowInputRequired: true, ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }) } as never,
    )) as CallToolResult | InputRequiredResult;
    if ((r as InputRequiredResult).resultType === 'input_required') {
      const ir = r as InputRequiredResult;
      return { kind: 'input_required', result: ir, state: ir.requestState, message: messageOf(ir) };
    }
    const result = r as CallToolResult;
    return { kind: 'result', result, text: textOf(result), isError: result.isError === true };
  } catch (e) {
    if (e instanceof ProtocolError) return { kind: 'error', code: e.code, message: e.message, data: e.data };
    throw e;
  }
}

/** Asserting accessors for readable tests. */
export function asked(reply: Reply): { state: string; message: string } {
  if (reply.kind !== 'input_required' || typeof reply.state !== 'string' || typeof reply.message !== 'string') {
    throw new Error(`expected input_required with a state and a message, got ${JSON.stringify(reply)}`);
  }
  return { state: reply.state, message: reply.message };
}

/**
 * Connects the 2025-era v1 SDK client (`initialize` handshake) to `serveStdio(factory)`.
 *
 * @param options.answer - what the client's elicitation handler answers; omit to not declare the capability.
 */
export async function connectV1(
  factory: () => McpServer,
  options: {
    answer?: (message: string) => { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> };
  } = {},
): Promise<{
  client: V1Client;
  asked: string[];
  callTool(name: string, args: unknown): Promise<{ text: string; isError: boolean }>;
  close(): Promise<void>;
}> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const handle = serveStdio(factory, { transport: serverSide, onerror: () => {} });
  const askedMessages: string[] = [];
  const client = new V1Client(
    { name: 'legacy-client', version: '0.0.0' },
    { capabilities: options.answer ? { elicitation: {} } : {} },
  );
  if (options.answer) {
    const answer = options.answer;
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      const message = (req.params as { message: string }).message;
      askedMessages.push(message);
      return answer(message) as never;
    });
  }
  await client.connect(clientSide as never);
  return {
    client,
    asked: askedMessages,
    callTool: async (name, args) => {
      const r = (await client.callTool({ name, arguments: args as Record<string, unknown> })) as {
        content: Array<{ type: string; text?: string }>;
        isError?: boolean;
      };
      return { text: r.content.map((c) => c.text ?? '').join(' '), isError: r.isError === true };
    },
    close: async () => {
      await client.close().catch(() => {});
      await handle.close().catch(() => {});
    },
  };
}

/** Flips one character of a compact JWE's ciphertext segment. */
export function tamper(state: string): string {
  const parts = state.split('.');
  const ct = parts[3] ?? '';
  const i = Math.floor(ct.length / 2);
  parts[3] = ct.slice(0, i) + (ct[i] === 'A' ? 'B' : 'A') + ct.slice(i + 1);
  return parts.join('.');
}
