/**
 * The listener of the approval and enrolment pages: a `node:http` listener bound on both loopback
 * addresses, the `Host` and `Origin` checks, reading small JSON bodies, and sending answers with
 * the security headers. The HTML they send is in `html.ts`.
 *
 * Why both `127.0.0.1` and `::1` on one port: the browser resolves `localhost`
 * to either. Holding both means no other local process can answer for
 * `http://localhost:PORT` (the WebAuthn origin), so start-up fails when either
 * is taken.
 *
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { ConfigError } from '../errors.js';

/** The Content-Security-Policy of every page: no inline script, nothing from elsewhere, never framed. */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/** Headers on every answer (W3C CSP 3; RFC 9111 §5.2.2.5 no-store; Referrer Policy; MIME sniffing off). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': PAGE_CSP,
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/** Most bytes of a POST body (a WebAuthn assertion or attestation is a few KiB). */
export const MAX_BODY_BYTES = 64 * 1024;

/** A listener on both loopback addresses. */
export interface LoopbackListener {
  /** The port both addresses listen on. */
  readonly port: number;
  /** `http://localhost:PORT`: the page origin and WebAuthn origin. */
  readonly origin: string;
  close(): Promise<void>;
}

/** A {@link ConfigError} `ERR_CONFIG_LISTEN`: start-up could not bind the port on one of the loopback addresses. */
function listenError(message: string): ConfigError {
  return new ConfigError('ERR_CONFIG_LISTEN', message);
}

function listenOne(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error): void => reject(e);
    server.once('error', onError);
    server.listen({ port, host, exclusive: true, ipv6Only: host === '::1' }, () => {
      server.off('error', onError);
      resolve((server.address() as { port: number }).port);
    });
  });
}

function closeOne(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections?.();
    server.close(() => resolve());
  });
}

/**
 * Listens with `handler` on `127.0.0.1:PORT` and `[::1]:PORT`.
 *
 * @param port - the port; 0 picks a random free port (the same one on both addresses; retried a few times
 *   when the second address has it taken).
 * @throws {ConfigError} `ERR_CONFIG_LISTEN` naming the address when `port` is given and either address has it taken, or no
 *   common free port was found.
 */
export async function listenLoopback(
  port: number,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<LoopbackListener> {
  if (!Number.isSafeInteger(port) || port < 0 || port > 65_535)
    throw new RangeError('port must be an integer from 0 to 65535');
  for (let attempt = 0; attempt < 20; attempt++) {
    const v4 = createServer(handler);
    const v6 = createServer(handler);
    let bound: number;
    try {
      bound = await listenOne(v4, port, '127.0.0.1');
    } catch (e) {
      throw listenError(
        `cannot listen on 127.0.0.1:${port}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
    try {
      await listenOne(v6, bound, '::1');
    } catch (e) {
      await closeOne(v4);
      if (port === 0 && (e as NodeJS.ErrnoException).code === 'EADDRINUSE') continue;
      throw listenError(
        `cannot listen on [::1]:${bound}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
    return {
      port: bound,
      origin: `http://localhost:${bound}`,
      close: async () => {
        await Promise.all([closeOne(v4), closeOne(v6)]);
      },
    };
  }
  throw listenError('found no port free on both 127.0.0.1 and ::1');
}

/**
 * Sends an answer with the security headers.
 *
 * @param method - the request's method: for `HEAD` the body is left out (its length is still sent).
 *   Defaults to none (the body is sent).
 */
export function send(res: ServerResponse, status: number, type: string, body: string, method?: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
  res.end(method === 'HEAD' ? undefined : body);
}

/** Sends JSON. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));
}

/**
 * The request's `Host` must be the page's own (`localhost:PORT`): refuses DNS-rebinding
 * (another name resolving to 127.0.0.1) before anything is read or shown.
 */
export function hostMatches(req: IncomingMessage, origin: string): boolean {
  return req.headers.host === new URL(origin).host;
}

/**
 * Behind `--public-url` (served on the `--http` listener, perhaps behind a TLS proxy whose port
 * differs from ours): the `Host` header's host name must be the public URL's, whatever the port.
 */
export function hostnameMatches(host: string | undefined | null, origin: string): boolean {
  if (typeof host !== 'string' || host === '') return false;
  let hostname: string;
  try {
    hostname = new URL(`http://${host}/`).hostname;
  } catch {
    return false;
  }
  return hostname === new URL(origin).hostname;
}

/** Every POST needs `Origin` equal to the page's origin, exactly (RFC 6454; no header is a refusal). */
export function originMatches(req: IncomingMessage, origin: string): boolean {
  return req.headers.origin === origin;
}

/**
 * Reads a JSON object body of at most {@link MAX_BODY_BYTES} from a `node:http` request or a
 * web-standard `Request`'s body stream (both are async iterables of bytes).
 *
 * @returns the object, or a short reason (`'too large'`, `'not JSON'`, `'not an object'`).
 */
export async function readJson(
  body: AsyncIterable<Uint8Array> | null,
): Promise<{ ok: true; value: Record<string, unknown> } | { ok: false; reason: string }> {
  const chunks: Buffer[] = [];
  let size = 0;
  if (body !== null) {
    for await (const chunk of body) {
      size += chunk.byteLength;
      if (size > MAX_BODY_BYTES) return { ok: false, reason: 'too large' };
      chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    }
  }
  if (size === 0) return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, reason: 'not an object' };
  return { ok: true, value: value as Record<string, unknown> };
}
