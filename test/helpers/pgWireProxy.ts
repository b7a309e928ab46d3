/**
 * A TCP proxy on loopback in front of a PostgreSQL server that reads the wire protocol (version 3,
 * no TLS) message by message in both directions and asks a hook before forwarding each one. The
 * failover test uses it to crash the primary at a named point of a real store's traffic (before
 * the spend's `COMMIT` reaches the server, or as its acknowledgement reaches the store): the store
 * under test is the real `PostgresStore`, unchanged, talking over a real socket.
 *
 * Protocol: the first frontend message (and any after an `SSLRequest`/`GSSENCRequest` refused with one
 * byte) is untyped (int32 length, then the body); every later message in either direction is a type
 * byte and an int32 length that counts itself. See "Message Formats" in the PostgreSQL documentation.
 */
import { createServer, connect as netConnect, type AddressInfo, type Server, type Socket } from 'node:net';

export interface WireMessage {
  /** `frontend`: from the client (the store) to the server; `backend`: from the server. */
  readonly direction: 'frontend' | 'backend';
  /** The connection's number (from 1, in accept order). */
  readonly connection: number;
  /** The type byte as a character (`Q`, `P`, `C`, `Z`, …); `''` for an untyped start-up message. */
  readonly type: string;
  /** The whole message as it goes on the wire. */
  readonly bytes: Buffer;
  /**
   * Its text where it has one: the query of `Q` and `P` (Parse), the command tag of `C`
   * (CommandComplete, e.g. `COMMIT`), the transaction status of `Z` (`I`, `T`, `E`), the backend's
   * process ID of `K` (BackendKeyData); `''` otherwise.
   */
  readonly text: string;
}

/**
 * What to do with one message: pass it on; drop it and close both sides of its connection; or hold
 * it, to be written in one piece with the next message forwarded in the same direction on the same
 * connection (so that the receiver reads both in one chunk).
 */
export type Verdict = 'forward' | 'drop' | 'hold';

export interface PgWireProxy {
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:PORT/postgres` through the proxy. */
  readonly url: string;
  /** Replaces the hook (default: forward everything). */
  setHook(hook: (message: WireMessage) => Verdict): void;
  close(): Promise<void>;
}

function cString(buf: Buffer, from: number): string {
  const end = buf.indexOf(0, from);
  return buf.toString('utf8', from, end < 0 ? buf.length : end);
}

function textOf(type: string, bytes: Buffer): string {
  switch (type) {
    case 'Q':
    case 'C':
      return cString(bytes, 5);
    case 'P': {
      const nameEnd = bytes.indexOf(0, 5);
      return nameEnd < 0 ? '' : cString(bytes, nameEnd + 1);
    }
    case 'Z':
      return bytes.length > 5 ? String.fromCharCode(bytes[5]!) : '';
    case 'K':
      return bytes.length >= 9 ? String(bytes.readInt32BE(5)) : '';
    default:
      return '';
  }
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/**
 * Starts a proxy on 127.0.0.1 (a free port) to `127.0.0.1:targetPort`.
 */
export async function startPgWireProxy(targetPort: number): Promise<PgWireProxy> {
  let hook: (message: WireMessage) => Verdict = () => 'forward';
  const sockets = new Set<Socket>();
  let connections = 0;

  const server: Server = createServer((client) => {
    const connection = ++connections;
    const upstream = netConnect({ host: '127.0.0.1', port: targetPort });
    sockets.add(client);
    sockets.add(upstream);
    let closed = false;
    const closeBoth = (): void => {
      if (closed) return;
      closed = true;
      // end(), not destroy(): whatever was already forwarded still reaches the other side.
      client.end();
      upstream.end();
      setTimeout(() => {
        client.destroy();
        upstream.destroy();
      }, 1_000).unref();
    };
    client.on('error', closeBoth);
    upstream.on('error', closeBoth);
    client.on('close', () => {
      sockets.delete(client);
      closeBoth();
    });
    upstream.on('close', () => {
      sockets.delete(upstream);
      closeBoth();
    });

    let frontendTyped = false;
    let awaitingSslAnswer = false;
    let frontendBuf = Buffer.alloc(0);
    let backendBuf = Buffer.alloc(0);

    const held = new Map<Socket, Buffer[]>([
      [client, []],
      [upstream, []],
    ]);
    const pass = (message: WireMessage, to: Socket): boolean => {
      if (closed) return false;
      const verdict = hook(message);
      if (verdict === 'drop') {
        closeBoth();
        return false;
      }
      const queue = held.get(to)!;
      queue.push(message.bytes);
      if (verdict === 'forward') to.write(Buffer.concat(queue.splice(0)));
      return true;
    };

    client.on('data', (chunk: Buffer) => {
      frontendBuf = Buffer.concat([frontendBuf, chunk]);
      for (;;) {
        if (closed) return;
        if (!frontendTyped) {
          if (frontendBuf.length < 8) return;
          const len = frontendBuf.readInt32BE(0);
          if (frontendBuf.length < len) return;
          const bytes = frontendBuf.subarray(0, len);
          frontendBuf = frontendBuf.subarray(len);
          const code = bytes.readInt32BE(4);
          if (code === SSL_REQUEST || code === GSSENC_REQUEST) awaitingSslAnswer = true;
          else frontendTyped = true;
          if (!pass({ direction: 'frontend', connection, type: '', bytes, text: '' }, upstream)) return;
          continue;
        }
        if (frontendBuf.length < 5) return;
        const len = frontendBuf.readInt32BE(1);
        if (frontendBuf.length < len + 1) return;
        const bytes = frontendBuf.subarray(0, len + 1);
        frontendBuf = frontendBuf.subarray(len + 1);
        const type = String.fromCharCode(bytes[0]!);
        if (!pass({ direction: 'frontend', connection, type, bytes, text: textOf(type, bytes) }, upstream)) return;
      }
    });

    upstream.on('data', (chunk: Buffer) => {
      backendBuf = Buffer.concat([backendBuf, chunk]);
      for (;;) {
        if (closed) return;
        if (awaitingSslAnswer) {
          // One byte, 'N' (no TLS here) or 'S'; the client's next message is untyped again.
          if (backendBuf.length < 1) return;
          const bytes = backendBuf.subarray(0, 1);
          backendBuf = backendBuf.subarray(1);
          awaitingSslAnswer = false;
          if (!pass({ direction: 'backend', connection, type: '', bytes, text: '' }, client)) return;
          continue;
        }
        if (backendBuf.length < 5) return;
        const len = backendBuf.readInt32BE(1);
        if (backendBuf.length < len + 1) return;
        const bytes = backendBuf.subarray(0, len + 1);
        backendBuf = backendBuf.subarray(len + 1);
        const type = String.fromCharCode(bytes[0]!);
        if (!pass({ direction: 'backend', connection, type, bytes, text: textOf(type, bytes) }, client)) return;
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    setHook(h) {
      hook = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
