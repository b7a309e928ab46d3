/**
 * Shared harness of the interop suite: the built mcp-confirm CLI (`../dist/cli/main.js`, built by the
 * root's `npm run build`) served to real third-party MCP clients over stdio and over `--http`, with
 * what each client said on the wire recorded, so a test can state which protocol revision a client
 * negotiated and which elicitation modes it declared, next to what it could do.
 *
 * - stdio: the client starts `node test/fixtures/stdioTap.mjs LOG node MAIN --root …`, a transparent
 *   relay that writes every JSON-RPC line of both directions to LOG.
 * - `--http`: the CLI listens on 127.0.0.1 (port 0, its serving line read from stderr) behind a small
 *   recording reverse proxy on another loopback port, which keeps each request's JSON-RPC body and
 *   `MCP-Protocol-Version` header and streams every answer back unchanged (SSE included).
 *
 * Nothing is timed: waits are for a line or an exit, and the generous {@link DEADLINE_MS} only turns a
 * hang into a failure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** Bounds a wait for a child process's line or exit: only a hang reaches it. */
export const DEADLINE_MS = 90_000;

/** The repository root (the interop folder's parent). */
export const REPO = resolve(import.meta.dirname, '../..');
/** The built CLI every test serves: this checkout's, or another build's `dist/cli/main.js` named by `MCP_CONFIRM_CLI`. */
export const MAIN = process.env.MCP_CONFIRM_CLI ? resolve(process.env.MCP_CONFIRM_CLI) : join(REPO, 'dist/cli/main.js');
/** The stdio relay that records both directions. */
export const TAP = join(import.meta.dirname, 'fixtures/stdioTap.mjs');
/** The interop folder's own packages (where the clients' binaries live). */
export const INTEROP = resolve(import.meta.dirname, '..');

if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build at the repository root first`);

/** A throwaway directory with a root the server may delete in. */
export interface Scratch {
  dir: string;
  root: string;
  /** Writes `root/name` (content `hello\n` by default) and returns its absolute path. */
  file(name: string, content?: string): string;
  /** Whether `root/name` exists. */
  exists(name: string): boolean;
  /** A path for a log or config file outside the root. */
  path(name: string): string;
}

const cleanups: Array<() => void | Promise<void>> = [];

/** Runs every cleanup registered so far (processes killed, directories removed): call it in `afterAll`. */
export async function cleanUp(): Promise<void> {
  for (const c of cleanups.splice(0).reverse()) await c();
}

/** Registers `fn` (e.g. closing a client) to run in {@link cleanUp}, before what was registered earlier. */
export function onCleanUp(fn: () => void | Promise<void>): void {
  cleanups.push(fn);
}

/** A fresh scratch directory (its real path), removed by {@link cleanUp}. */
export function scratch(): Scratch {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-interop-')));
  const root = join(dir, 'root');
  mkdirSync(root);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return {
    dir,
    root,
    file(name, content = 'hello\n') {
      const p = join(root, name);
      writeFileSync(p, content);
      return p;
    },
    exists: (name) => existsSync(join(root, name)),
    path: (name) => join(dir, name),
  };
}

/**
 * An approvers file with one approver for `principals` (default `local`): a real P-256 public key as a
 * COSE_Key (RFC 9052 §7) and a random credential id, mode 0600, outside the root. Nobody holds its
 * private key: the suite never approves on the page, it only checks what a client is shown.
 */
export function approversFile(s: Scratch, principals: string[] = ['local'], rpId = 'localhost'): string {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  const x = Buffer.from(jwk.x!, 'base64url');
  const y = Buffer.from(jwk.y!, 'base64url');
  // {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y} in CBOR.
  const cose = Buffer.concat([
    Buffer.from([0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]),
    x,
    Buffer.from([0x22, 0x58, 0x20]),
    y,
  ]);
  const path = s.path('approvers.json');
  writeFileSync(
    path,
    JSON.stringify({
      version: 1,
      rpId,
      approvers: [
        {
          name: 'interop',
          credentialId: randomBytes(16).toString('base64url'),
          publicKey: cose.toString('base64url'),
          counter: 0,
          transports: ['internal'],
          principals,
          enrolledAt: new Date(0).toISOString(),
        },
      ],
    }),
    { mode: 0o600 },
  );
  chmodSync(path, 0o600);
  return path;
}

/** One JSON-RPC message as the stdio relay or the HTTP recorder saw it. */
export interface Seen {
  /** `client` for what the client sent, `server` for what it was answered. */
  from: 'client' | 'server';
  msg: Record<string, any>;
  /** Over HTTP: the request's `MCP-Protocol-Version` header, when it had one. */
  protocolHeader?: string;
}

/** The command a stdio client starts: the CLI behind the recording relay. */
export interface StdioServer {
  command: string;
  args: string[];
  /** Everything recorded so far. */
  seen(): Seen[];
}

/** The CLI over stdio for `s.root` with extra arguments, behind {@link TAP}. */
export function stdioServer(s: Scratch, extra: string[] = []): StdioServer {
  const log = s.path(`tap-${randomBytes(4).toString('hex')}.log`);
  return {
    command: process.execPath,
    args: [TAP, log, process.execPath, MAIN, '--root', s.root, ...extra],
    seen: () =>
      existsSync(log)
        ? readFileSync(log, 'utf8')
            .split('\n')
            .filter((l) => l.startsWith('> ') || l.startsWith('< '))
            .map((l) => ({
              from: l.startsWith('> ') ? ('client' as const) : ('server' as const),
              msg: JSON.parse(l.slice(2)),
            }))
        : [],
  };
}

/** What a client's recorded traffic says about it. */
export interface ClientFacts {
  /** The revision its `tools/call` ran under: `2026-07-28` (per-request `_meta`) or the one `initialize` agreed. */
  era: string | undefined;
  /** The elicitation modes it declared: `form` for `{}` (the spec's default), else the keys of `elicitation`. */
  elicitation: string[];
  /** Whether it probed with `server/discover` first. */
  discovered: boolean;
}

const PV = 'io.modelcontextprotocol/protocolVersion';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';

function modes(elicitation: unknown): string[] {
  if (elicitation === undefined || elicitation === null) return [];
  const keys = Object.keys(elicitation as object).filter((k) => k === 'form' || k === 'url');
  return keys.length === 0 ? ['form'] : keys.sort();
}

/** Reads the era and the declared elicitation modes from what a client sent (its last `tools/call`). */
export function factsOf(seen: Seen[]): ClientFacts {
  const client = seen.filter((s) => s.from === 'client');
  const calls = client.filter((s) => s.msg.method === 'tools/call');
  const call = calls[calls.length - 1];
  const discovered = client.some((s) => s.msg.method === 'server/discover');
  const modern = call?.msg.params?._meta?.[PV] ?? call?.protocolHeader;
  if (modern === '2026-07-28') {
    return { era: modern, elicitation: modes(call!.msg.params._meta?.[CAPS]?.elicitation), discovered };
  }
  // The last handshake (a bridge may open a probe session of its own first).
  const init = client.filter((s) => s.msg.method === 'initialize').pop();
  const initId = init?.msg.id;
  const answer = seen.find((s) => s.from === 'server' && s.msg.id === initId && s.msg.result?.protocolVersion);
  return {
    era: answer?.msg.result.protocolVersion ?? init?.msg.params?.protocolVersion,
    elicitation: modes(init?.msg.params?.capabilities?.elicitation),
    discovered,
  };
}

/** A running `mcp-confirm --http` behind the recording proxy. */
export interface HttpServer {
  /** The proxy's `/mcp` URL, which clients use. */
  url: URL;
  /** The CLI's own listener (for clients that must see its Host, e.g. with token auth). */
  direct: URL;
  stderr(): string;
  seen(): Seen[];
}

/** Starts `mcp-confirm --root s.root --http 127.0.0.1:0 …extra` and the recorder in front; both stopped by {@link cleanUp}. */
export async function httpServer(s: Scratch, extra: string[] = [], bind = '127.0.0.1:0'): Promise<HttpServer> {
  const proc = spawn(process.execPath, [MAIN, '--root', s.root, '--http', bind, ...extra], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  cleanups.push(() => killAndWait(proc));
  let err = '';
  const direct = await new Promise<URL>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`no serving line in ${DEADLINE_MS} ms: ${err}`)), DEADLINE_MS);
    proc.stderr!.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      const m = / at (http:\/\/\S+\/mcp);/.exec(err);
      if (m) {
        clearTimeout(timer);
        res(new URL(m[1]!));
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      rej(new Error(`mcp-confirm exited with ${String(code)} before serving: ${err}`));
    });
  });
  const seen: Seen[] = [];
  const proxy = await recordingProxy(direct, seen);
  cleanups.push(() => new Promise<void>((r) => proxy.server.close(() => r())));
  return { url: proxy.url, direct, stderr: () => err, seen: () => seen.slice() };
}

async function killAndWait(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const gone = new Promise<void>((r) => proc.once('exit', () => r()));
  proc.kill('SIGTERM');
  await gone;
}

/** A reverse proxy on 127.0.0.1 that records JSON-RPC requests and JSON answers to `target`, streaming everything through. */
async function recordingProxy(target: URL, seen: Seen[]): Promise<{ server: Server; url: URL }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const header = req.headers['mcp-protocol-version'];
      if (body.length > 0) {
        try {
          const parsed = JSON.parse(body.toString('utf8'));
          for (const msg of Array.isArray(parsed) ? parsed : [parsed])
            seen.push({ from: 'client', msg, ...(typeof header === 'string' ? { protocolHeader: header } : {}) });
        } catch {
          // not JSON: passed through unrecorded
        }
      }
      const headers = { ...req.headers, host: target.host };
      const up = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
        (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          const type = String(upRes.headers['content-type'] ?? '');
          if (type.startsWith('application/json')) {
            const out: Buffer[] = [];
            upRes.on('data', (c: Buffer) => out.push(c));
            upRes.on('end', () => {
              try {
                const parsed = JSON.parse(Buffer.concat(out).toString('utf8'));
                for (const msg of Array.isArray(parsed) ? parsed : [parsed]) seen.push({ from: 'server', msg });
              } catch {
                // not JSON
              }
            });
          } else if (type.startsWith('text/event-stream')) {
            let pending = '';
            upRes.on('data', (c: Buffer) => {
              pending += c.toString('utf8');
              let i;
              while ((i = pending.indexOf('\n')) >= 0) {
                const line = pending.slice(0, i).replace(/\r$/, '');
                pending = pending.slice(i + 1);
                if (line.startsWith('data:')) {
                  try {
                    seen.push({ from: 'server', msg: JSON.parse(line.slice(5)) });
                  } catch {
                    // a non-JSON data line
                  }
                }
              }
            });
          }
          upRes.pipe(res);
        },
      );
      up.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      res.on('close', () => up.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return { server, url: new URL(`http://127.0.0.1:${port}${target.pathname}`) };
}

/** The result of running a command to its end. */
export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command args` (stdin closed) to its end; rejects after {@link DEADLINE_MS} (a hang), killing it. */
export function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Finished> {
  return new Promise((res, rej) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      rej(new Error(`${command} ${args.join(' ')} still running after ${DEADLINE_MS} ms: ${stdout} ${stderr}`));
    }, DEADLINE_MS);
    child.on('error', (e) => {
      clearTimeout(timer);
      rej(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
  });
}

/** The Inspector's bin, as `npx mcp-inspector` runs it. */
export const INSPECTOR = join(INTEROP, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');

/** Runs `mcp-inspector --cli TARGET… --method tools/call --tool-name delete_file --tool-arg path=PATH`, its catalog kept in the scratch dir. */
export function inspectorCall(s: Scratch, target: string[], path: string, extra: string[] = []): Promise<Finished> {
  return run(
    process.execPath,
    [
      INSPECTOR,
      '--cli',
      ...target,
      '--method',
      'tools/call',
      '--tool-name',
      'delete_file',
      '--tool-arg',
      `path=${path}`,
      ...extra,
    ],
    { ...process.env, MCP_CATALOG_PATH: s.path('inspector-catalog.json') },
  );
}

/** The text of a tool result's content, joined. */
export function textOf(result: unknown): string {
  const content = (result as { content?: unknown } | null)?.content;
  if (!Array.isArray(content)) return '';
  return content.map((c: { type?: string; text?: string }) => (c.type === 'text' ? c.text : '')).join('\n');
}

/**
 * A refusal as the client surfaces it: a tool result with `isError: true` (2025-era), or a thrown
 * error (2026-07-28: JSON-RPC `-32021`; or a client that turns an error result into an exception):
 * its text either way.
 */
export async function refusalText(call: () => Promise<unknown>): Promise<string> {
  try {
    const r = (await call()) as { isError?: boolean; content?: unknown };
    if (r && typeof r === 'object' && r.isError === true) return textOf(r);
    return `NOT REFUSED: ${JSON.stringify(r)}`;
  } catch (e) {
    const err = e as { message?: string; data?: unknown };
    return `${err.message ?? String(e)} ${err.data === undefined ? '' : JSON.stringify(err.data)}`;
  }
}

/** The form answer a person gives: yes, or no. */
export const YES = { action: 'accept' as const, content: { confirmed: true } };
export const NO = { action: 'decline' as const };

/** A free TCP port on 127.0.0.1 (listened on, then closed), for a server whose URL must be known before it starts. */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createTcpServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => res(port));
    });
  });
}

/** An issuer of RS256 access tokens (RFC 9068 `at+jwt`) whose JWK set is written to a file for `--auth-jwks`. */
export interface TokenIssuer {
  issuer: string;
  jwksPath: string;
  /** A token of `sub` for `audience`, valid for an hour. */
  token(sub: string, audience: string): string;
}

/** A token issuer for `--auth-issuer` / `--auth-jwks`, signing with `node:crypto` (RFC 7515 §3.1, RS256). */
export function tokenIssuer(s: Scratch, issuer = 'https://auth.interop.test'): TokenIssuer {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwksPath = s.path('jwks.json');
  writeFileSync(
    jwksPath,
    JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256', use: 'sig' }] }),
  );
  const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  return {
    issuer,
    jwksPath,
    token(sub, audience) {
      const nowS = Math.floor(Date.now() / 1000);
      const input = `${b64({ alg: 'RS256', kid: 'k1', typ: 'at+jwt' })}.${b64({ iss: issuer, sub, aud: audience, iat: nowS - 5, exp: nowS + 3600, scope: 'mcp' })}`;
      return `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
    },
  };
}
