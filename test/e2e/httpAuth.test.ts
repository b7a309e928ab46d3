/**
 * `mcp-confirm --http` as an OAuth 2.1 resource server: bearer JWTs verified
 * with jose against a local JWK set (RS256 key pair generated here), 401 with
 * the RFC 9728 challenge, the Protected Resource Metadata document, and the
 * principal = the token's iss + sub, through real clients of both eras.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ACCEPT, asked, callTool } from '../helpers/harness.js';
import {
  connectLegacy,
  connectModern,
  LEGACY_INITIALIZE,
  MCP_POST_HEADERS,
  rawRequest,
  runCli,
  startHttpServer,
  type HttpServerProcess,
} from '../helpers/httpServer.js';

const ISSUER = 'https://auth.example.test';
let R: string;
let root: string;
let jwksPath: string;
let privateKey: CryptoKey;
let publicPem: string;
let otherKey: CryptoKey;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  privateKey = pair.privateKey;
  publicPem = await exportSPKI(pair.publicKey);
  otherKey = (await generateKeyPair('RS256')).privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-jwks-')));
  jwksPath = join(dir, 'jwks.json');
  writeFileSync(jwksPath, JSON.stringify({ keys: [jwk] }));
});
beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-httpauth-')));
  root = join(R, 'root');
  mkdirSync(root);
  writeFileSync(join(root, 'report.txt'), 'alice');
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  rmSync(R, { recursive: true, force: true });
});

async function serve(extra: string[] = [], jwks = jwksPath): Promise<HttpServerProcess> {
  const server = await startHttpServer([
    '--root',
    root,
    '--http',
    '127.0.0.1:0',
    '--auth-issuer',
    ISSUER,
    '--auth-jwks',
    jwks,
    ...extra,
  ]);
  cleanups.push(async () => {
    if (server.proc.exitCode === null) server.proc.kill('SIGKILL');
    await server.exited;
  });
  return server;
}

interface TokenOptions {
  sub?: string;
  iss?: string;
  aud?: string | string[];
  expiresAt?: number;
  notBefore?: number;
  key?: CryptoKey;
}

/** A JWT access token for `aud` (the server's resource URL unless overridden). */
function token(resource: URL, o: TokenOptions = {}): Promise<string> {
  const nowS = Math.floor(Date.now() / 1000);
  return new SignJWT({
    scope: 'mcp',
    client_id: 'notes-app',
    ...(o.notBefore !== undefined ? { nbf: o.notBefore } : {}),
  })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'at+jwt' })
    .setIssuer(o.iss ?? ISSUER)
    .setAudience(o.aud ?? resource.href)
    .setSubject(o.sub ?? 'u1')
    .setIssuedAt(nowS - 5)
    .setExpirationTime(o.expiresAt ?? nowS + 300)
    .sign(o.key ?? privateKey);
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

describe('--auth-issuer/--auth-jwks: bearer tokens are required and verified', () => {
  it('answers a request without a token 401 with WWW-Authenticate naming the RFC 9728 document, which names the issuer; a valid token gets 200', async () => {
    const server = await serve();
    const none = await rawRequest(server.url, {
      headers: { ...MCP_POST_HEADERS, Host: server.url.host },
      body: LEGACY_INITIALIZE,
    });
    expect(none.status).toBe(401);
    const metadataUrl = `http://${server.url.host}/.well-known/oauth-protected-resource/mcp`;
    expect(none.headers['www-authenticate']).toMatch(/^Bearer /);
    expect(none.headers['www-authenticate']).toContain(`resource_metadata="${metadataUrl}"`);
    const doc = await fetch(metadataUrl);
    expect(doc.status).toBe(200);
    expect(await doc.json()).toMatchObject({ resource: server.url.href, authorization_servers: [ISSUER] });
    const ok = await rawRequest(server.url, {
      headers: { ...MCP_POST_HEADERS, Host: server.url.host, Authorization: `Bearer ${await token(server.url)}` },
      body: LEGACY_INITIALIZE,
    });
    expect(ok.status).toBe(200);
  });

  it('refuses expired, wrong-issuer, wrong-audience, alg none, HS256-signed-with-the-public-key, foreign-key and garbage tokens with 401; the valid token passes', async () => {
    const server = await serve();
    const nowS = Math.floor(Date.now() / 1000);
    const valid = await token(server.url);
    const [, payload] = valid.split('.');
    const bad: Record<string, string> = {
      expired: await token(server.url, { expiresAt: nowS - 120 }),
      'wrong issuer': await token(server.url, { iss: 'https://other-issuer.example.test' }),
      'wrong audience': await token(server.url, { aud: 'https://other-resource.example.test/mcp' }),
      'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`,
      'HS256 with the public key as secret': await new SignJWT(
        JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<string, unknown>,
      )
        .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
        .sign(new TextEncoder().encode(publicPem)),
      'signed by another key': await token(server.url, { key: otherKey }),
      garbage: 'not-a-jwt',
    };
    for (const [name, t] of Object.entries(bad)) {
      const r = await rawRequest(server.url, {
        headers: { ...MCP_POST_HEADERS, Host: server.url.host, Authorization: `Bearer ${t}` },
        body: LEGACY_INITIALIZE,
      });
      expect(r.status, name).toBe(401);
      expect(r.headers['www-authenticate'], name).toContain('error="invalid_token"');
      expect(r.body, name).not.toContain(t);
    }
    const control = await rawRequest(server.url, {
      headers: { ...MCP_POST_HEADERS, Host: server.url.host, Authorization: `Bearer ${valid}` },
      body: LEGACY_INITIALIZE,
    });
    expect(control.status).toBe(200);
    // Nothing secret echoed: no token reaches the server's diagnostics either.
    for (const t of [valid, ...Object.values(bad)]) expect(server.stderr()).not.toContain(t);
  });

  it("logs each refused token on stderr: one line naming jose's code and claim and the token's iss, sub and kid (rendered as untrusted values), never the token; a burst of one reason is rate-limited; control: a valid token logs nothing", async () => {
    const server = await serve();
    const nowS = Math.floor(Date.now() / 1000);
    const send = (t: string) =>
      rawRequest(server.url, {
        headers: { ...MCP_POST_HEADERS, Host: server.url.host, Authorization: `Bearer ${t}` },
        body: LEGACY_INITIALIZE,
      });
    const valid = await token(server.url);
    const [, payload] = valid.split('.');
    const named = 'iss `https://auth.example.test`, sub `u1`, kid `k1`';
    const cases: Array<[string, string]> = [
      [await token(server.url, { expiresAt: nowS - 3600 }), `ERR_JWT_EXPIRED exp; ${named}`],
      [
        await token(server.url, { iss: 'https://other-issuer.example.test' }),
        'ERR_JWT_CLAIM_VALIDATION_FAILED iss; iss `https://other-issuer.example.test`, sub `u1`, kid `k1`',
      ],
      [
        await token(server.url, { aud: 'https://other-resource.example.test/mcp' }),
        `ERR_JWT_CLAIM_VALIDATION_FAILED aud; ${named}`,
      ],
      [await token(server.url, { key: otherKey }), `ERR_JWS_SIGNATURE_VERIFICATION_FAILED; ${named}`],
      [
        `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`,
        'ERR_JOSE_ALG_NOT_ALLOWED; iss `https://auth.example.test`, sub `u1`',
      ],
      ['not-a-jwt', 'ERR_JWS_INVALID'],
      // Attacker text in a claim: one line, the line break and the escape character shown as escapes.
      [
        await token(server.url, {
          sub: 'u1\n\u001b[32mmcp-confirm: approval page: approved by ann',
          notBefore: nowS + 3600,
        }),
        'ERR_JWT_CLAIM_VALIDATION_FAILED nbf; iss `https://auth.example.test`, sub `u1\\n\\x1b[32mmcp-confirm: approval page: approved by ann`, kid `k1`',
      ],
    ];
    // Each reason has its own line; each is waited for (stderr is its own pipe), in order.
    for (const [t, line] of cases) {
      expect((await send(t)).status).toBe(401);
      await server.waitForStderr(`mcp-confirm: bearer token refused: ${line}\n`);
    }
    const refusals = () =>
      server
        .stderr()
        .split('\n')
        .filter((l) => l.includes('bearer token refused'));
    expect(refusals()).toEqual(cases.map(([, line]) => `mcp-confirm: bearer token refused: ${line}`));
    // Control: a valid token passes and logs nothing (the next line is the next refusal's).
    expect((await send(valid)).status).toBe(200);
    const unknownKid = await new SignJWT({ scope: 'mcp' })
      .setProtectedHeader({ alg: 'RS256', kid: 'k9' })
      .setIssuer(ISSUER)
      .setAudience(server.url.href)
      .setSubject('u1')
      .setExpirationTime(nowS + 300)
      .sign(privateKey);
    expect((await send(unknownKid)).status).toBe(401);
    await server.waitForStderr(
      'mcp-confirm: bearer token refused: ERR_JWKS_NO_MATCHING_KEY; iss `https://auth.example.test`, sub `u1`, kid `k9`\n',
    );
    expect(refusals()).toHaveLength(cases.length + 1);
    // A burst of one reason (the wrong audience again, 5 times): at most one line per second for it,
    // the ones not logged counted in its next line. How many lines that makes depends on how fast
    // the requests come, so the count is checked in test/http/tokenRefusalLog.test.ts (its clock is
    // injected); here: every refusal is either a line or counted in one, never more than were sent.
    const wrongAud = cases[2]![0];
    for (let i = 0; i < 5; i++) expect((await send(wrongAud)).status).toBe(401);
    // A last refusal of a reason not seen yet (so never rate-limited): its line comes after every line of the burst.
    const noExp = await new SignJWT({ scope: 'mcp' })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(server.url.href)
      .setSubject('last')
      .sign(privateKey);
    expect((await send(noExp)).status).toBe(401);
    await server.waitForStderr(
      'mcp-confirm: bearer token refused: ERR_JWT_CLAIM_VALIDATION_FAILED exp; iss `https://auth.example.test`, sub `last`, kid `k1`\n',
    );
    const audLines = refusals().filter((l) => l.includes('ERR_JWT_CLAIM_VALIDATION_FAILED aud'));
    const counted = audLines.reduce(
      (n, l) =>
        n +
        1 +
        Number(/; (\d+) more refused for the same reason since the previous such line, not logged$/.exec(l)?.[1] ?? 0),
      0,
    );
    expect(audLines.length).toBeGreaterThanOrEqual(1);
    expect(counted).toBeLessThanOrEqual(6);
    // Never the token, not even its signature; never a raw control character.
    for (const t of [valid, unknownKid, noExp, ...cases.map(([t]) => t)]) {
      expect(server.stderr()).not.toContain(t);
      const signature = t.split('.')[2];
      if (signature) expect(server.stderr()).not.toContain(signature);
    }
    expect(server.stderr()).not.toContain('\u001b');
    expect(
      server
        .stderr()
        .split('\n')
        .filter((l) => l.startsWith('mcp-confirm: approval page:')),
    ).toEqual([]);
  });

  it('accepts a token whose aud is an array containing the resource', async () => {
    const server = await serve();
    const t = await token(server.url, { aud: ['https://other.example.test', server.url.href] });
    const r = await rawRequest(server.url, {
      headers: { ...MCP_POST_HEADERS, Host: server.url.host, Authorization: `Bearer ${t}` },
      body: LEGACY_INITIALIZE,
    });
    expect(r.status).toBe(200);
  });
});

describe('clock skew, a remote JWK set and an explicit --resource', () => {
  it('accepts an nbf within the stated 30 s skew; refuses an nbf an hour ahead and a token 10 s past its exp (exp has no skew) with 401 (an hour past: the generic text)', async () => {
    const server = await serve();
    const nowS = Math.floor(Date.now() / 1000);
    const send = async (t: string) =>
      rawRequest(server.url, {
        headers: { ...MCP_POST_HEADERS, Host: server.url.host, Authorization: `Bearer ${t}` },
        body: LEGACY_INITIALIZE,
      });
    const early = await send(await token(server.url, { notBefore: nowS + 10 }));
    expect(early.status).toBe(200);
    const future = await send(await token(server.url, { notBefore: nowS + 3600 }));
    expect(future.status).toBe(401);
    expect(future.headers['www-authenticate']).toContain('error="invalid_token"');
    const justExpired = await send(await token(server.url, { expiresAt: nowS - 10 }));
    expect(justExpired.status).toBe(401);
    expect(justExpired.headers['www-authenticate']).toContain('error="invalid_token"');
    // Its text ("Token has expired" from the SDK's exp check) is not asserted: it holds only while the request is under
    // 20 s old, a machine-speed bound. A token expired an hour ago gets jose's refusal, the generic text (docs/http.md, "Tokens").
    const longExpired = await send(await token(server.url, { expiresAt: nowS - 3600 }));
    expect(longExpired.status).toBe(401);
    expect(JSON.parse(longExpired.body)).toEqual({
      error: 'invalid_token',
      error_description: 'The access token is invalid or expired',
    });
  });

  it("--auth-jwks http://127.0.0.1:PORT/…: a JWK set fetched over loopback HTTP verifies a real client's token, and a token of another key is refused with 401", async () => {
    const jwksBody = readFileSync(jwksPath, 'utf8');
    let fetched = 0;
    const jwksServer = createServer((req, res) => {
      fetched += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end(jwksBody);
    });
    await new Promise<void>((res) => jwksServer.listen(0, '127.0.0.1', () => res()));
    cleanups.push(() => new Promise<void>((res) => jwksServer.close(() => res())));
    const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`;
    const server = await serve([], jwksUrl);
    const client = await connectModern(server.url, await token(server.url, { sub: 'u1' }));
    cleanups.push(() => client.close());
    const { message } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'report.txt' } }));
    expect(message).toContain('report.txt');
    expect(fetched).toBeGreaterThan(0);
    const foreign = await rawRequest(server.url, {
      headers: {
        ...MCP_POST_HEADERS,
        Host: server.url.host,
        Authorization: `Bearer ${await token(server.url, { key: otherKey })}`,
      },
      body: LEGACY_INITIALIZE,
    });
    expect(foreign.status).toBe(401);
    expect(existsSync(join(root, 'report.txt'))).toBe(true);
  });

  it("--resource URL is the audience, the metadata document's resource and the 401 challenge's origin, and its host an allowed Host; a token for the bound URL instead is refused", async () => {
    const resource = 'http://mcp.example.test/mcp';
    const server = await serve(['--resource', resource]);
    const headers = { ...MCP_POST_HEADERS, Host: 'mcp.example.test' };
    const none = await rawRequest(server.url, { headers, body: LEGACY_INITIALIZE });
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toContain(
      'resource_metadata="http://mcp.example.test/.well-known/oauth-protected-resource/mcp"',
    );
    const doc = await rawRequest(server.url, {
      method: 'GET',
      path: '/.well-known/oauth-protected-resource/mcp',
      headers: { Host: 'mcp.example.test' },
    });
    expect(doc.status).toBe(200);
    expect(JSON.parse(doc.body)).toMatchObject({ resource, authorization_servers: [ISSUER] });
    const forResource = await rawRequest(server.url, {
      headers: { ...headers, Authorization: `Bearer ${await token(new URL(resource))}` },
      body: LEGACY_INITIALIZE,
    });
    expect(forResource.status).toBe(200);
    const forBoundUrl = await rawRequest(server.url, {
      headers: { ...headers, Authorization: `Bearer ${await token(server.url)}` },
      body: LEGACY_INITIALIZE,
    });
    expect(forBoundUrl.status).toBe(401);
  });
});

describe('the principal over HTTP is the token issuer + subject (bind-7)', () => {
  it('refuses with -32602 a state minted for U1 presented by U2 of the same OAuth client; U1 then deletes the file once', async () => {
    const server = await serve();
    const u1 = await connectModern(server.url, await token(server.url, { sub: 'u1' }));
    const u2 = await connectModern(server.url, await token(server.url, { sub: 'u2' }));
    cleanups.push(
      () => u1.close(),
      () => u2.close(),
    );
    const { state } = asked(await callTool(u1, { name: 'delete_file', arguments: { path: 'report.txt' } }));
    const stolen = await callTool(u2, {
      name: 'delete_file',
      arguments: { path: 'report.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(stolen).toMatchObject({ kind: 'error', code: -32602 });
    expect(existsSync(join(root, 'report.txt'))).toBe(true);
    const own = await callTool(u1, {
      name: 'delete_file',
      arguments: { path: 'report.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(own).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(join(root, 'report.txt'))).toBe(false);
    writeFileSync(join(root, 'report.txt'), 'alice');
    const replay = await callTool(u1, {
      name: 'delete_file',
      arguments: { path: 'report.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_SPENT]')).toBe(true);
    expect(existsSync(join(root, 'report.txt'))).toBe(true);
  });

  it('a 2025-era v1 client with a token confirms and deletes; its session refuses another user (403) and a request without a token (401)', async () => {
    const server = await serve();
    const {
      client,
      transport,
      asked: questions,
    } = await connectLegacy(
      server.url,
      async () => ({ action: 'accept', content: { confirmed: true } }),
      await token(server.url, { sub: 'u1' }),
    );
    cleanups.push(() => client.close());
    const sessionId = transport.sessionId;
    expect(sessionId).toEqual(expect.any(String));
    const list = JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} });
    const headers = {
      ...MCP_POST_HEADERS,
      Host: server.url.host,
      'Mcp-Session-Id': sessionId!,
      'MCP-Protocol-Version': '2025-11-25',
    };
    const asU2 = await rawRequest(server.url, {
      headers: { ...headers, Authorization: `Bearer ${await token(server.url, { sub: 'u2' })}` },
      body: list,
    });
    expect(asU2.status).toBe(403);
    const anonymous = await rawRequest(server.url, { headers, body: list });
    expect(anonymous.status).toBe(401);
    const r = (await client.callTool({ name: 'delete_file', arguments: { path: 'report.txt' } })) as {
      content: Array<{ text?: string }>;
      isError?: boolean;
    };
    expect(r.isError ?? false).toBe(false);
    expect(questions).toHaveLength(1);
    expect(existsSync(join(root, 'report.txt'))).toBe(false);
  });
});

describe('HTTP start-up checks (exit code 2)', () => {
  it('refuses a non-loopback bind without auth', async () => {
    const r = await runCli(['--root', root, '--http', '192.0.2.1:0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('not a loopback address');
  });

  it('requires --resource for a wildcard bind', async () => {
    const r = await runCli(['--root', root, '--http', '0.0.0.0:0', '--auth-issuer', ISSUER, '--auth-jwks', jwksPath]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--resource URL is required with a wildcard bind');
  });

  it('refuses --auth-issuer without --auth-jwks, and a JWK set holding a symmetric key', async () => {
    const alone = await runCli(['--root', root, '--http', '127.0.0.1:0', '--auth-issuer', ISSUER]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('--auth-issuer and --auth-jwks go together');
    const octPath = join(R, 'oct.json');
    writeFileSync(octPath, JSON.stringify({ keys: [{ kty: 'oct', k: Buffer.alloc(32, 1).toString('base64url') }] }));
    const oct = await runCli([
      '--root',
      root,
      '--http',
      '127.0.0.1:0',
      '--auth-issuer',
      ISSUER,
      '--auth-jwks',
      octPath,
    ]);
    expect(oct.code).toBe(2);
    expect(oct.stderr).toContain('symmetric (oct) key');
    expect(oct.stderr).not.toContain(Buffer.alloc(32, 1).toString('base64url'));
  });

  it('refuses a plain-http --auth-jwks URL on a non-loopback host', async () => {
    const r = await runCli([
      '--root',
      root,
      '--http',
      '127.0.0.1:0',
      '--auth-issuer',
      ISSUER,
      '--auth-jwks',
      'http://192.0.2.1/jwks.json',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--auth-jwks URL must be https');
  });

  it('refuses HTTP flags without --http', async () => {
    const r = await runCli(['--root', root, '--auth-issuer', ISSUER]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--auth-issuer needs --http HOST:PORT');
  });
});
