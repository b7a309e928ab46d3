/**
 * Serves an {@link HttpApp} on a `node:http` listener (the SDK's
 * `toNodeHandler` from `@modelcontextprotocol/node` converts requests and
 * streams responses) and shuts it down gracefully.
 *
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import type { HttpApp } from './app.js';

/** A listening server. */
export interface Listening {
  /** The address actually bound (the port is the real one when 0 was asked). */
  address: AddressInfo;
  /** Requests being served now, not counting long-lived `GET` event streams. */
  readonly inFlight: number;
  /**
   * Graceful stop: stop accepting connections, let in-flight requests finish
   * for up to `drainMs` milliseconds, then close the app (every session and
   * stream) and every connection. Resolves with whether the drain completed
   * before the deadline. Calling it again returns the same promise.
   */
  close(drainMs: number): Promise<boolean>;
}

/** A Host header's shape: a registered name or IPv4 address, or a bracketed IPv6 address, and an optional port. */
const WELL_FORMED_HOST = /^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * Listens on `host:port`. A request whose `Host` is missing or malformed gets 400 before anything else.
 *
 * @param onerror - errors of the Node adapter (a request that could not be converted).
 * @throws the listen error (`EADDRINUSE`, `EACCES`, `EADDRNOTAVAIL`) as Node reports it.
 */
export async function listenHttp(
  app: HttpApp,
  host: string,
  port: number,
  onerror?: (error: Error) => void,
): Promise<Listening> {
  const handle = toNodeHandler(app, onerror ? { onerror } : {});
  let inFlight = 0;
  let idle: (() => void) | undefined;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    // A Host the adapter cannot turn into a URL (credentials, spaces, …) is refused here, plainly and
    // without echoing it: the app's own Host check then sees only well-formed authorities (RFC 3986 §3.2).
    if (!WELL_FORMED_HOST.test(req.headers.host ?? '')) {
      res
        .writeHead(400, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' })
        .end('Bad Request: malformed Host header\n');
      return;
    }
    // A GET on /mcp is a standing event stream of a 2025 session: it ends when the session closes, not on its own.
    const counted = req.method !== 'GET';
    if (counted) {
      inFlight++;
      res.once('close', () => {
        inFlight--;
        if (inFlight === 0) idle?.();
      });
    }
    void handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  let closing: Promise<boolean> | undefined;
  return {
    address: server.address() as AddressInfo,
    get inFlight() {
      return inFlight;
    },
    close(drainMs: number): Promise<boolean> {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        let timer: NodeJS.Timeout | undefined;
        const drained = await Promise.race([
          new Promise<boolean>((resolve) => {
            if (inFlight === 0) resolve(true);
            idle = () => resolve(true);
          }),
          new Promise<boolean>((resolve) => {
            timer = setTimeout(() => resolve(false), drainMs);
          }),
        ]);
        clearTimeout(timer);
        await app.close().catch(() => {});
        server.closeAllConnections();
        await stopped;
        return drained;
      })();
      return closing;
    },
  };
}
