/**
 * A local webhook receiver for the notification tests: a `node:http` server on 127.0.0.1, port 0,
 * that records every request and answers each as the test says (a status, or no answer at all).
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApprovalNotice } from '../../src/notify/notice.js';

/** One request as the receiver saw it. */
export interface Received {
  method: string;
  /** The path and query. */
  path: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
}

export interface Receiver {
  /** `http://127.0.0.1:PORT` */
  origin: string;
  /** The URL a channel posts to: the origin, a path and a query that stand for a channel's secret. */
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/** The path and query of every receiver's {@link Receiver.url}: what no log line or message may show. */
export const SECRET_PATH = '/services/T0SECRET/B0SECRET/xoxSECRETpath';
export const SECRET_QUERY = '?auth=tkSECRETquery';

/**
 * Starts a receiver. `answer(request, index)` gives the status of the index-th request (from 0),
 * or `'hang'` to never answer it (the connection stays open until {@link Receiver.close}).
 */
export async function startReceiver(
  answer: (r: Received, index: number) => number | 'hang' = () => 200,
): Promise<Receiver> {
  const received: Received[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : (v ?? '');
      const r: Received = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const index = received.push(r) - 1;
      const status = answer(r, index);
      if (status === 'hang') hanging.push(res);
      else res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    url: `${origin}${SECRET_PATH}${SECRET_QUERY}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The origin of a port nothing listens on: a receiver started and closed (connections to it are refused). */
export async function downOrigin(): Promise<string> {
  const rx = await startReceiver();
  await rx.close();
  return rx.origin;
}

/** A notice of the requested kind, for the tests. */
export function requested(overrides: Partial<ApprovalNotice> = {}): ApprovalNotice {
  return {
    type: 'approval.requested',
    approvalId: 'apr_1',
    url: 'https://mcp.example.com/approve/apr_1',
    tool: 'delete_file',
    audience: 'mcp-confirm',
    expiresAtMs: Date.UTC(2026, 11, 3, 23, 0, 0),
    principalTag: 'tag_0123456789abcdef',
    ...overrides,
  };
}

/** An immediate `sleep` that records the waits asked for. */
export function recordingSleep(): { waits: number[]; sleep: (ms: number) => Promise<void> } {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (ms) => {
      waits.push(ms);
    },
  };
}
