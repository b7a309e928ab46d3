/**
 * The requestState format against its oracle: mcp-confirm seals and opens compact JWEs (RFC 7516
 * §7.1, `dir` + `A256GCM`) synchronously over node:crypto; jose 6.2.17 (`compactDecrypt`,
 * `CompactEncrypt`) is the reference it must agree with, and the opener is stricter than jose where
 * issue 8 part 3 asks (only our header bytes, only canonical base64url).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import fc from 'fast-check';
import { CompactEncrypt, compactDecrypt } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { KeyRing, type KeySpec } from '../../src/state/keyRing.js';
import { Sealer, StateRefusedError, type ConfirmClaims } from '../../src/state/sealer.js';
import {
  assembleJwe,
  flipBit,
  headerVariants,
  nonCanonicalLastCharacter,
  ourHeaderText,
  secretKeyOf,
  withPart,
} from '../helpers/jwe.js';

const vector = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'joseSealedState.json'), 'utf8')) as {
  keySpec: KeySpec;
  audience: string;
  principal: string;
  nowMs: number;
  protectedHeader: string;
  state: string;
  claims: ConfirmClaims;
};

const NOW = 1_800_000_000_000;
const CTX = { principal: 'local', nowMs: NOW };
const JOSE_OPTIONS = { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] };
const INPUT = {
  tool: 'delete_file',
  args: 'A'.repeat(43),
  question: 'B'.repeat(43),
  fingerprint: { path: '/srv/scratch/cache.txt', size: 5 },
  principal: 'local',
  nowMs: NOW,
};

let spec: KeySpec;
let keys: KeyRing;
let sealer: Sealer;
beforeAll(async () => {
  spec = KeyRing.generateSpec('k1');
  keys = await KeyRing.fromSpecs([spec]);
  sealer = new Sealer({ keys, audience: 'mcp-confirm', ttlSeconds: 300 });
});

/** jose's reading of a state under the ring's key: the header and plaintext, or undefined when jose refuses it. */
async function joseOpen(state: string): Promise<{ protectedHeader: unknown; plaintext: string } | undefined> {
  try {
    const r = await compactDecrypt(state, keys.sealing.secretKey, JOSE_OPTIONS);
    return { protectedHeader: r.protectedHeader, plaintext: Buffer.from(r.plaintext).toString('utf8') };
  } catch {
    return undefined;
  }
}

/** Our reading: the claims, or the refusal. */
function oursOpen(state: string, s: Sealer = sealer): ConfirmClaims | StateRefusedError {
  try {
    return s.openSync(state, CTX);
  } catch (e) {
    if (e instanceof StateRefusedError) return e;
    throw e;
  }
}

/** The claims as JSON carries them (`-0` becomes 0, `undefined` members drop). */
const asJson = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

describe('the state format, with jose as the oracle', () => {
  it('opens a state sealed by the earlier jose-based version (a committed test vector) to the same claims, and seals under that kid with the same header bytes', async () => {
    const old = new Sealer({
      keys: await KeyRing.fromSpecs([vector.keySpec]),
      audience: vector.audience,
      ttlSeconds: 300,
    });
    const ctx = { principal: vector.principal, nowMs: vector.nowMs };
    expect(old.openSync(vector.state, ctx)).toEqual(vector.claims);
    await expect(old.open(vector.state, ctx)).resolves.toEqual(vector.claims);
    const [encodedHeader] = vector.state.split('.');
    expect(Buffer.from(encodedHeader!, 'base64url').toString('utf8')).toBe(vector.protectedHeader);
    expect(vector.protectedHeader).toBe(ourHeaderText(vector.keySpec.kid));
    const { state } = old.sealSync({ ...INPUT, principal: vector.principal, nowMs: vector.nowMs });
    expect(state.split('.')[0]).toBe(encodedHeader);
    // Control: the vector is expired one TTL later, so it was opened for what it is, not waved through.
    expect(() => old.openSync(vector.state, { ...ctx, nowMs: vector.claims.exp * 1000 })).toThrow(StateRefusedError);
  });

  it('every state we seal opens with jose compactDecrypt, to our exact header and the same claims', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary' }),
        fc.string({ unit: 'binary' }),
        fc.jsonValue(),
        async (tool, principal, fingerprint) => {
          const { state, claims } = sealer.sealSync({ ...INPUT, tool, principal, fingerprint });
          const jose = await joseOpen(state);
          expect(jose?.protectedHeader).toEqual({
            alg: 'dir',
            enc: 'A256GCM',
            kid: 'k1',
            typ: 'mcp-confirm-state+jwt',
          });
          expect(JSON.parse(jose!.plaintext)).toEqual(asJson(claims));
          expect(jose!.plaintext).toBe(JSON.stringify(claims));
          expect(asJson(sealer.openSync(state, { principal, nowMs: NOW }))).toEqual(asJson(claims));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('every state jose seals with our header opens with ours, to the same claims', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary' }),
        fc.jsonValue(),
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        async (tool, fingerprint, jti) => {
          const claims = {
            aud: 'mcp-confirm',
            sub: KeyRing.principalTag(keys.sealing, 'local'),
            iat: NOW / 1000,
            exp: NOW / 1000 + 300,
            jti: Buffer.from(jti).toString('base64url'),
            tool,
            args: INPUT.args,
            question: INPUT.question,
            fingerprint,
          };
          // jose through the ring's WebCrypto CryptoKey (kept in the public RingKey), ours through its KeyObject.
          const state = await new CompactEncrypt(Buffer.from(JSON.stringify(claims), 'utf8'))
            .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: 'k1', typ: 'mcp-confirm-state+jwt' })
            .encrypt(keys.sealing.cryptoKey);
          expect(asJson(oursOpen(state))).toEqual(asJson(claims));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('seals each state with a fresh random 96-bit IV, an empty encrypted key and a 128-bit tag', () => {
    const ivs = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const parts = sealer.sealSync(INPUT).state.split('.');
      expect(parts).toHaveLength(5);
      expect(parts[1]).toBe('');
      expect(Buffer.from(parts[2]!, 'base64url')).toHaveLength(12);
      expect(Buffer.from(parts[4]!, 'base64url')).toHaveLength(16);
      ivs.add(parts[2]!);
    }
    expect(ivs.size).toBe(1000);
  });

  it('a state whose fingerprint seals 600 others while it is sealed (its random bytes refilled meanwhile) opens with ours and jose, and no two of the 601 share an IV or a jti', async () => {
    const inner: Array<{ state: string; claims: ConfirmClaims }> = [];
    const fingerprint = {
      // Seals only when first serialised (by sealSync); later serialisations (the checks below) just answer.
      toJSON: () => {
        if (inner.length === 0) for (let i = 0; i < 600; i++) inner.push(sealer.sealSync(INPUT));
        return { path: '/srv/scratch/cache.txt' };
      },
    };
    const outer = sealer.sealSync({ ...INPUT, fingerprint });
    expect(inner).toHaveLength(600);
    const opened = sealer.openSync(outer.state, CTX);
    expect(opened.fingerprint).toEqual({ path: '/srv/scratch/cache.txt' });
    expect(opened.jti).toBe(outer.claims.jti);
    expect(JSON.parse((await joseOpen(outer.state))!.plaintext)).toEqual(asJson(outer.claims));
    const all = [outer, ...inner];
    expect(new Set(all.map((s) => s.state.split('.')[2])).size).toBe(601);
    expect(new Set(all.map((s) => s.claims.jti)).size).toBe(601);
    // Control: the inner states open too.
    for (const s of inner) expect(sealer.openSync(s.state, CTX).jti).toBe(s.claims.jti);
  });
});

describe('tampering that changes the decoded bytes: refused by ours and by jose', () => {
  it('refuses every single-bit change of the header, the IV, the ciphertext and the tag; the untouched state opens with both', async () => {
    const { state, claims } = sealer.sealSync(INPUT);
    expect(oursOpen(state)).toEqual(claims);
    expect(await joseOpen(state)).toBeDefined();
    const parts = state.split('.');
    const openedByOurs: string[] = [];
    const openedByJose: string[] = [];
    let tried = 0;
    for (const index of [0, 2, 3, 4]) {
      const bits = Buffer.from(parts[index]!, 'base64url').length * 8;
      for (let bit = 0; bit < bits; bit++) {
        const tampered = flipBit(state, index, bit);
        tried++;
        if (!(oursOpen(tampered) instanceof StateRefusedError)) openedByOurs.push(`part ${index} bit ${bit}`);
        if ((await joseOpen(tampered)) !== undefined) openedByJose.push(`part ${index} bit ${bit}`);
      }
    }
    const expectedBits = [0, 2, 3, 4].reduce((n, i) => n + Buffer.from(parts[i]!, 'base64url').length * 8, 0);
    expect(tried).toBe(expectedBits);
    expect(tried).toBeGreaterThan(96 + 128 + 8 * 200);
    expect(openedByOurs).toEqual([]);
    expect(openedByJose).toEqual([]);
  });

  it.each([0, 4, 8, 12, 15])('refuses the genuine tag truncated to %i bytes, as jose does', async (bytes) => {
    const { state, claims } = sealer.sealSync(INPUT);
    const truncated = withPart(state, 4, (tag) =>
      Buffer.from(tag, 'base64url').subarray(0, bytes).toString('base64url'),
    );
    expect(oursOpen(truncated)).toBeInstanceOf(StateRefusedError);
    expect(await joseOpen(truncated)).toBeUndefined();
    expect(oursOpen(state)).toEqual(claims);
  });

  it('refuses a tag of 17 bytes (the genuine tag and one more byte), as jose does', async () => {
    const { state } = sealer.sealSync(INPUT);
    const longer = withPart(state, 4, (tag) =>
      Buffer.concat([Buffer.from(tag, 'base64url'), Buffer.of(0)]).toString('base64url'),
    );
    expect(oursOpen(longer)).toBeInstanceOf(StateRefusedError);
    expect(await joseOpen(longer)).toBeUndefined();
  });

  it.each([8, 11, 13, 16])(
    'refuses a state correctly sealed under our key and header with a %i-byte IV, as jose does; a 12-byte IV opens with both',
    async (ivBytes) => {
      const plaintext = Buffer.from(JSON.stringify(sealer.sealSync(INPUT).claims), 'utf8');
      const forged = assembleJwe(ourHeaderText('k1'), plaintext, keys.sealing.secretKey, { ivBytes });
      expect(oursOpen(forged)).toBeInstanceOf(StateRefusedError);
      expect(await joseOpen(forged)).toBeUndefined();
      const control = assembleJwe(ourHeaderText('k1'), plaintext, keys.sealing.secretKey, { ivBytes: 12 });
      expect(oursOpen(control)).not.toBeInstanceOf(StateRefusedError);
      expect(await joseOpen(control)).toBeDefined();
    },
  );

  it.each([
    ['one part added after the tag', (s: string) => `${s}.AAAA`],
    ['an empty part added after the tag', (s: string) => `${s}.`],
    ['an empty part added before the header', (s: string) => `.${s}`],
    ['the tag part removed', (s: string) => s.split('.').slice(0, 4).join('.')],
    [
      'the encrypted key part removed',
      (s: string) =>
        s
          .split('.')
          .filter((_, i) => i !== 1)
          .join('.'),
    ],
    ['only the header', (s: string) => s.split('.')[0]!],
    [
      'the IV and the ciphertext joined',
      (s: string) =>
        s.split('.').slice(0, 2).join('.') + '.' + s.split('.').slice(2, 4).join('') + '.' + s.split('.')[4],
    ],
  ])('refuses a state with %s, as jose does', async (_label, mutate) => {
    const { state } = sealer.sealSync(INPUT);
    const mutated = mutate(state);
    expect(oursOpen(mutated)).toBeInstanceOf(StateRefusedError);
    expect(await joseOpen(mutated)).toBeUndefined();
  });

  it('refuses a non-empty encrypted key (dir has none), as jose does', async () => {
    const { state, claims } = sealer.sealSync(INPUT);
    for (const encryptedKey of ['AAAA', Buffer.alloc(32, 7).toString('base64url')]) {
      const mutated = withPart(state, 1, () => encryptedKey);
      expect(oursOpen(mutated)).toBeInstanceOf(StateRefusedError);
      expect(await joseOpen(mutated)).toBeUndefined();
    }
    expect(oursOpen(state)).toEqual(claims);
  });
});

describe('canonical base64url in every part: refused by ours alone', () => {
  it('refuses every non-canonical spelling of the last character of the header, the ciphertext and the tag (the same bytes to a lenient decoder); the canonical spelling opens', async () => {
    // kid vector-1 gives a 79-byte header (4 unused bits); pad the fingerprint until the ciphertext has unused bits too.
    const ring = await KeyRing.fromSpecs([vector.keySpec]);
    const s = new Sealer({ keys: ring, audience: 'mcp-confirm', ttlSeconds: 300 });
    let sealed = s.sealSync(INPUT);
    for (let pad = 1; Buffer.from(sealed.state.split('.')[3]!, 'base64url').length % 3 === 0; pad++) {
      sealed = s.sealSync({ ...INPUT, fingerprint: { ...INPUT.fingerprint, pad: 'x'.repeat(pad) } });
    }
    expect(oursOpen(sealed.state, s)).toEqual(sealed.claims);
    const counts: Record<number, number> = {};
    for (const index of [0, 2, 3, 4]) {
      const part = sealed.state.split('.')[index]!;
      const spellings = nonCanonicalLastCharacter(part);
      counts[index] = spellings.length;
      for (const spelling of spellings) {
        expect(Buffer.from(spelling, 'base64url').equals(Buffer.from(part, 'base64url'))).toBe(true);
        expect(
          oursOpen(
            withPart(sealed.state, index, () => spelling),
            s,
          ),
        ).toBeInstanceOf(StateRefusedError);
      }
    }
    // A 12-byte IV has no unused bits; the header, the ciphertext and the 16-byte tag have 2 or 4.
    expect(counts).toEqual({ 0: 15, 2: 0, 3: expect.any(Number), 4: 15 });
    expect(counts[3]).toBeGreaterThanOrEqual(3);
  });

  it.each([
    ['padding "=" after the tag', 4, (p: string) => `${p}=`],
    ['padding "==" after the tag', 4, (p: string) => `${p}==`],
    ['a "*" inside the ciphertext', 3, (p: string) => `${p.slice(0, 10)}*${p.slice(10)}`],
    ['a space inside the IV', 2, (p: string) => `${p.slice(0, 8)} ${p.slice(8)}`],
    ['a line feed inside the header', 0, (p: string) => `${p.slice(0, 20)}\n${p.slice(20)}`],
    [
      '"+" for "-" and "/" for "_" (standard base64) in the ciphertext',
      3,
      (p: string) => p.replaceAll('-', '+').replaceAll('_', '/'),
    ],
  ])('refuses %s; the canonical state opens', (_label, index, respell) => {
    let sealed = sealer.sealSync(INPUT);
    while (!/[-_]/.test(sealed.state.split('.')[3]!)) sealed = sealer.sealSync(INPUT);
    const respelled = withPart(sealed.state, index, respell);
    expect(respelled).not.toBe(sealed.state);
    expect(oursOpen(respelled)).toBeInstanceOf(StateRefusedError);
    expect(oursOpen(sealed.state)).toEqual(sealed.claims);
  });
});

describe('the protected header: only the bytes we write for that kid (BUG-17)', () => {
  it('opens a state hand-assembled under our key with exactly our header (the control of the rows below)', async () => {
    const { claims } = sealer.sealSync(INPUT);
    const state = assembleJwe(ourHeaderText('k1'), Buffer.from(JSON.stringify(claims), 'utf8'), keys.sealing.secretKey);
    expect(oursOpen(state)).toEqual(claims);
    expect(await joseOpen(state)).toBeDefined();
  });

  it.each(headerVariants('k1').map((v) => [v.label, v] as const))(
    'refuses a state sealed under our key with the header %s',
    async (_label, variant) => {
      const { claims } = sealer.sealSync(INPUT);
      const json = Buffer.from(JSON.stringify(claims), 'utf8');
      const forged = assembleJwe(variant.text, variant.deflate ? deflateRawSync(json) : json, keys.sealing.secretKey);
      expect(oursOpen(forged)).toMatchObject({ reason: 'malformed' });
    },
  );

  it.each([
    [
      '"zip":"DEF" (jose compresses)',
      { alg: 'dir', enc: 'A256GCM', kid: 'k1', typ: 'mcp-confirm-state+jwt', zip: 'DEF' },
    ],
    ['"cty":"JWT"', { alg: 'dir', enc: 'A256GCM', kid: 'k1', typ: 'mcp-confirm-state+jwt', cty: 'JWT' }],
    [
      '"jku"',
      {
        alg: 'dir',
        enc: 'A256GCM',
        kid: 'k1',
        typ: 'mcp-confirm-state+jwt',
        jku: 'https://attacker.example/jwks.json',
      },
    ],
    [
      '"x5u"',
      { alg: 'dir', enc: 'A256GCM', kid: 'k1', typ: 'mcp-confirm-state+jwt', x5u: 'https://attacker.example/cert.pem' },
    ],
    ['the members in another order', { typ: 'mcp-confirm-state+jwt', kid: 'k1', enc: 'A256GCM', alg: 'dir' }],
  ])(
    'refuses a state jose seals under our key with %s, which jose itself opens to our claims',
    async (_label, header) => {
      const { claims } = sealer.sealSync(INPUT);
      const forged = await new CompactEncrypt(Buffer.from(JSON.stringify(claims), 'utf8'))
        .setProtectedHeader(header)
        .encrypt(keys.sealing.secretKey);
      expect(JSON.parse((await joseOpen(forged))!.plaintext)).toEqual(asJson(claims));
      expect(oursOpen(forged)).toMatchObject({ reason: 'malformed' });
    },
  );

  it('names a state with our header for a kid this ring does not hold unknown-key, and a header that is not ours malformed', async () => {
    const other = await KeyRing.fromSpecs([KeyRing.generateSpec('k2')]);
    const { state } = new Sealer({ keys: other, audience: 'mcp-confirm', ttlSeconds: 300 }).sealSync(INPUT);
    expect(oursOpen(state)).toMatchObject({ reason: 'unknown-key' });
    const spaced = assembleJwe(
      `{"alg":"dir","enc":"A256GCM","kid":"k2","typ": "mcp-confirm-state+jwt"}`,
      Buffer.from('{}'),
      other.sealing.secretKey,
    );
    expect(oursOpen(spaced)).toMatchObject({ reason: 'malformed' });
  });
});

describe('refusals are cheap and leave the process as they found it', () => {
  it('a refused state carries no stack frames, the stack-trace limit is restored after, and a state that opens is unaffected (control)', () => {
    const before = Error.stackTraceLimit;
    const { state, claims } = sealer.sealSync(INPUT);
    const refused = oursOpen(withPart(state, 3, (p) => (p[0] === 'A' ? 'B' : 'A') + p.slice(1)));
    expect(refused).toBeInstanceOf(StateRefusedError);
    expect((refused as StateRefusedError).reason).toBe('decrypt');
    expect((refused as StateRefusedError).stack ?? '').not.toMatch(/\n\s+at /);
    expect(Error.stackTraceLimit).toBe(before);
    expect(oursOpen(state)).toEqual(claims);
    expect(new Error('after').stack).toMatch(/\n\s+at /);
  });

  it('openOrRefusal returns the refusal openSync throws (same reason, no stack frames, the limit restored) and the claims of a state that opens (control)', () => {
    const before = Error.stackTraceLimit;
    const { state, claims } = sealer.sealSync(INPUT);
    const cases: Array<[string, string]> = [
      [withPart(state, 3, (p) => (p[0] === 'A' ? 'B' : 'A') + p.slice(1)), 'decrypt'],
      ['not.a.state', 'malformed'],
      ['', 'malformed'],
    ];
    for (const [forged, reason] of cases) {
      const returned = sealer.openOrRefusal(forged, CTX);
      expect(returned).toBeInstanceOf(StateRefusedError);
      expect((returned as StateRefusedError).reason).toBe(reason);
      expect((returned as StateRefusedError).stack ?? '').not.toMatch(/\n\s+at /);
      expect(oursOpen(forged)).toMatchObject({ reason });
      expect(Error.stackTraceLimit).toBe(before);
    }
    expect(sealer.openOrRefusal(state, CTX)).toEqual(claims);
  });
});

describe('only the exact text opens: every other spelling of a genuine state is refused', () => {
  it('any edit of a genuine state (inserting, replacing or deleting text, including characters a lenient decoder reads as others: U+0141 read as A, +, /, =, spaces, dots) is refused, whatever jose makes of it; the genuine state opens (control)', async () => {
    const { state, claims } = sealer.sealSync(INPUT);
    expect(oursOpen(state)).toEqual(claims);
    // Characters Node's base64url decoder skips, maps or truncates to an alphabet byte, and plain alphabet ones.
    const odd = fc.constantFrom(
      '\u0141',
      '\u0100',
      '\uFF41',
      '\u00C1',
      '\u0000',
      ' ',
      '\n',
      '=',
      '+',
      '/',
      '.',
      '-',
      '_',
      'A',
      'Q',
      'g',
      'w',
      '\uD800',
      '\u{1D400}',
    );
    const text = fc.oneof(odd, fc.string({ unit: 'binary', minLength: 1, maxLength: 3 }));
    const edit = fc.record({ at: fc.nat(state.length), cut: fc.nat(3), insert: fc.oneof(fc.constant(''), text) });
    const openedByJose: string[] = [];
    await fc.assert(
      fc.asyncProperty(edit, async ({ at, cut, insert }) => {
        const edited = state.slice(0, at) + insert + state.slice(Math.min(state.length, at + cut));
        fc.pre(edited !== state);
        expect(oursOpen(edited)).toBeInstanceOf(StateRefusedError);
        const jose = await joseOpen(edited);
        if (jose !== undefined) openedByJose.push(edited);
      }),
      { numRuns: 3000 },
    );
    // Where jose (lenient on spelling) opens an edited state, it finds the genuine claims: the edit changed no byte.
    for (const s of openedByJose) expect(JSON.parse((await joseOpen(s))!.plaintext)).toEqual(asJson(claims));
    expect(oursOpen(state)).toEqual(claims);
  });
});
