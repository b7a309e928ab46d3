/**
 * The operator's line for a refused bearer token (issue 16, part 5): `createJwtVerifier`'s
 * `onRefused` with `tokenRefusalLog`, inside `createHttpApp` (as `mcp-confirm --http` wires them),
 * reached by real v2 clients over the Streamable HTTP transport whose fetch hands each request to
 * the app. Real RS256 JWTs (jose). Both clocks, the verifier's and the log's, are the injected
 * `clock`: the rate limit is driven by moving it, never by sleeping.
 * test/e2e/httpAuth.test.ts checks the same lines on the built CLI's stderr.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHttpApp, type HttpApp } from '../../src/http/app.js';
import {
  createJwtVerifier,
  jwtPrincipalOf,
  REFUSAL_VALUE_MAX_GRAPHEMES,
  tokenRefusalLog,
} from '../../src/http/jwtAuth.js';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { MANUAL_CLIENT_OPTIONS } from '../helpers/harness.js';

const ISSUER = 'https://auth.example.test';
const RESOURCE = new URL('http://mcp.example.test/mcp');
const T0 = Date.UTC(2030, 0, 1); // the injected clock starts here
let signing: CryptoKey;
let otherKey: CryptoKey;
let jwk: JWK;
let R: string;
let app: HttpApp;
let lines: string[];
let clock: number;
const clients: Client[] = [];

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  signing = pair.privateKey;
  otherKey = (await generateKeyPair('RS256')).privateKey;
  jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
});

beforeEach(async () => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-refusal-log-')));
  mkdirSync(join(R, 'root'));
  writeFileSync(join(R, 'root', 'report.txt'), 'alice');
  clock = T0;
  lines = [];
  const now = () => clock;
  const verifier = await createJwtVerifier({
    issuer: ISSUER,
    jwks: { keys: [jwk] },
    resource: RESOURCE,
    now,
    onRefused: tokenRefusalLog({ log: (l) => lines.push(l), now }),
  });
  const { factory } = await createDemoServer({ roots: [join(R, 'root')] });
  app = createHttpApp({
    factory,
    resourceUrl: RESOURCE,
    allowedHostnames: [RESOURCE.hostname],
    auth: { verifier, issuer: ISSUER },
    principalOf: jwtPrincipalOf,
  });
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  await app.close();
  rmSync(R, { recursive: true, force: true });
});

interface TokenOptions {
  iss?: string;
  sub?: string;
  aud?: string;
  kid?: string;
  expS?: number;
  key?: CryptoKey;
}

/** A JWT for the resource, valid at the injected clock unless told otherwise. */
function token(o: TokenOptions = {}): Promise<string> {
  const nowS = Math.floor(clock / 1000);
  return new SignJWT({ scope: 'mcp' })
    .setProtectedHeader({ alg: 'RS256', kid: o.kid ?? 'k1' })
    .setIssuer(o.iss ?? ISSUER)
    .setAudience(o.aud ?? RESOURCE.href)
    .setSubject(o.sub ?? 'u1')
    .setIssuedAt(nowS - 5)
    .setExpirationTime(o.expS ?? nowS + 3600)
    .sign(o.key ?? signing);
}

/** Connects a real v2 client with `bearer`: resolves 'connected', or 'refused' when the app answered 401. */
async function connectWith(bearer: string): Promise<'connected' | 'refused'> {
  let status401 = false;
  const fetchVia: typeof fetch = async (input, init) => {
    // As on a real listener, the request names its Host (a fetch Request leaves it out).
    const request = new Request(input, init);
    request.headers.set('host', RESOURCE.host);
    const response = await app.fetch(request);
    if (response.status === 401) status401 = true;
    return response;
  };
  const client = new Client({ name: 'refusal-log-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  const transport = new StreamableHTTPClientTransport(RESOURCE, {
    fetch: fetchVia,
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  try {
    await client.connect(transport);
  } catch (e) {
    if (status401) return 'refused';
    throw e;
  }
  clients.push(client);
  return 'connected';
}

describe('a refused bearer token is logged for the operator (tokenRefusalLog)', () => {
  it("logs one line per refusal naming jose's code and claim and the token's iss, sub and kid, never the token; each reason on its own line; control: a valid token connects and logs nothing", async () => {
    const cases: Array<[string, string, string]> = [
      [
        await token({ aud: 'https://other.example.test/mcp' }),
        'ERR_JWT_CLAIM_VALIDATION_FAILED aud',
        'iss `https://auth.example.test`, sub `u1`, kid `k1`',
      ],
      [
        await token({ iss: 'https://evil.example.test' }),
        'ERR_JWT_CLAIM_VALIDATION_FAILED iss',
        'iss `https://evil.example.test`, sub `u1`, kid `k1`',
      ],
      [
        await token({ expS: Math.floor(T0 / 1000) - 3600 }),
        'ERR_JWT_EXPIRED exp',
        'iss `https://auth.example.test`, sub `u1`, kid `k1`',
      ],
      [
        await token({ key: otherKey }),
        'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
        'iss `https://auth.example.test`, sub `u1`, kid `k1`',
      ],
      [await token({ kid: 'k9' }), 'ERR_JWKS_NO_MATCHING_KEY', 'iss `https://auth.example.test`, sub `u1`, kid `k9`'],
    ];
    for (const [bearer] of cases) expect(await connectWith(bearer)).toBe('refused');
    expect(await connectWith('not-a-jwt')).toBe('refused');
    expect(lines).toEqual([
      ...cases.map(([, reason, named]) => `bearer token refused: ${reason}; ${named}`),
      'bearer token refused: ERR_JWS_INVALID', // nothing parsed, nothing named
    ]);
    for (const [bearer] of cases) {
      expect(lines.join('\n')).not.toContain(bearer);
      expect(lines.join('\n')).not.toContain(bearer.split('.')[2]); // not even the signature
    }
    // Control: a valid token connects; nothing is logged for it.
    expect(await connectWith(await token())).toBe('connected');
    expect(lines).toHaveLength(cases.length + 1);
  });

  it('a token past its exp within the 30 s skew jose allows is refused (exp has no skew) and logged as ERR_JWT_EXPIRED exp; control: one second before its exp it connects', async () => {
    const expS = Math.floor(T0 / 1000) + 60;
    const bearer = await token({ expS });
    clock = (expS - 1) * 1000;
    expect(await connectWith(bearer)).toBe('connected');
    clock = (expS + 10) * 1000;
    expect(await connectWith(bearer)).toBe('refused');
    expect(lines).toEqual([
      'bearer token refused: ERR_JWT_EXPIRED exp; iss `https://auth.example.test`, sub `u1`, kid `k1`',
    ]);
  });

  it('renders attacker text in iss, sub and kid as untrusted values (one line, escapes, bounded), never raw', async () => {
    const forged = 'mcp-confirm: approved by admin';
    const sub = `x\n\u001b[31m${forged}\u202E` + 'A'.repeat(5000);
    // An unknown kid (jose refuses it as no matching key), so the kid is attacker text too.
    expect(await connectWith(await token({ sub, kid: 'k1\r\nevil' }))).toBe('refused');
    expect(lines).toHaveLength(1);
    const [line] = lines;
    expect(line).not.toMatch(/[\u0000-\u001f\u007f\u202e]/);
    // The line break, the escape and the bidi override are shown as escapes; the 5,000 A's are cut.
    expect(line).toMatch(
      /^bearer token refused: ERR_JWKS_NO_MATCHING_KEY; iss `https:\/\/auth\.example\.test`, sub `x\\n\\x1b\[31mmcp-confirm: [^`]*…A+` \(shortened, fingerprint [0-9a-f]{16}\), kid `k1\\r\\nevil`$/,
    );
    // A short one, whole: the bidi override and the line break shown as escapes.
    expect(await connectWith(await token({ iss: 'https://evil\u202E.test\n' }))).toBe('refused');
    expect(lines[1]).toBe(
      'bearer token refused: ERR_JWT_CLAIM_VALIDATION_FAILED iss; iss `https://evil⟨U+202E⟩.test\\n`, sub `u1`, kid `k1`',
    );
    // Bounded: the 5,000 A's are cut (each value to REFUSAL_VALUE_MAX_GRAPHEMES graphemes, plus its fingerprint).
    expect(line!.length).toBeLessThan(3 * REFUSAL_VALUE_MAX_GRAPHEMES + 400);
    // A claim that is not a string is shown as its JSON, marked.
    const nonString = await new SignJWT({
      sub: 42 as unknown as string,
      iss: ISSUER,
      aud: 'https://other.example.test/mcp',
      exp: Math.floor(clock / 1000) + 60,
    })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .sign(signing);
    clock += 1000;
    expect(await connectWith(nonString)).toBe('refused');
    expect(lines[2]).toContain('sub `42` (not a string)');
  });

  it('rate-limits per code and claim: at most one line per second each, the suppressed ones counted in the next line (driven by the injected clock)', async () => {
    const wrongAud = await token({ aud: 'https://other.example.test/mcp' });
    const wrongIss = await token({ iss: 'https://evil.example.test' });
    // t = 0: the first wrong audience is logged; three more are counted, not logged.
    for (let i = 0; i < 4; i++) expect(await connectWith(wrongAud)).toBe('refused');
    // Another reason at the same instant has its own line.
    expect(await connectWith(wrongIss)).toBe('refused');
    expect(lines).toEqual([
      'bearer token refused: ERR_JWT_CLAIM_VALIDATION_FAILED aud; iss `https://auth.example.test`, sub `u1`, kid `k1`',
      'bearer token refused: ERR_JWT_CLAIM_VALIDATION_FAILED iss; iss `https://evil.example.test`, sub `u1`, kid `k1`',
    ]);
    // t = 999 ms: still within the second: counted.
    clock = T0 + 999;
    expect(await connectWith(wrongAud)).toBe('refused');
    expect(lines).toHaveLength(2);
    // t = 1000 ms: a line again, with the four suppressed since the last one.
    clock = T0 + 1000;
    expect(await connectWith(wrongAud)).toBe('refused');
    expect(lines[2]).toBe(
      'bearer token refused: ERR_JWT_CLAIM_VALIDATION_FAILED aud; iss `https://auth.example.test`, sub `u1`, kid `k1`; 4 more refused for the same reason since the previous such line, not logged',
    );
    // The count starts again: the next line after another second carries no count.
    clock = T0 + 2000;
    expect(await connectWith(wrongAud)).toBe('refused');
    expect(lines[3]).toBe(
      'bearer token refused: ERR_JWT_CLAIM_VALIDATION_FAILED aud; iss `https://auth.example.test`, sub `u1`, kid `k1`',
    );
    // The wrong issuer's window is its own: logged at once, nothing suppressed.
    expect(await connectWith(wrongIss)).toBe('refused');
    expect(lines).toHaveLength(5);
    expect(lines[4]).toBe(
      'bearer token refused: ERR_JWT_CLAIM_VALIDATION_FAILED iss; iss `https://evil.example.test`, sub `u1`, kid `k1`',
    );
  });
});
