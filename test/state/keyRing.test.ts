import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { base64url } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { KeyRing } from '../../src/state/keyRing.js';
import { Sealer, StateRefusedError } from '../../src/state/sealer.js';
import { nonCanonicalLastCharacter } from '../helpers/jwe.js';

const dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const key = (bytes: number) => base64url.encode(new Uint8Array(bytes).fill(7));
const NOW = 1_800_000_000_000;
const input = {
  tool: 'delete_file',
  args: 'A'.repeat(43),
  question: 'B'.repeat(43),
  fingerprint: { path: '/x' },
  principal: 'local',
  nowMs: NOW,
};

describe('KeyRing construction', () => {
  it('reads a key file whose first key seals', async () => {
    const file = join(dir, 'ok.json');
    writeFileSync(file, JSON.stringify({ keys: [KeyRing.generateSpec('k2'), KeyRing.generateSpec('k1')] }));
    const ring = await KeyRing.fromFile(file);
    expect(ring.kids).toEqual(['k2', 'k1']);
    expect(ring.sealing.kid).toBe('k2');
  });

  it.each([
    ['an empty list', { keys: [] }, TypeError],
    ['a 31-byte key', { keys: [{ kid: 'k1', k: key(31) }] }, RangeError],
    ['a 33-byte key', { keys: [{ kid: 'k1', k: key(33) }] }, RangeError],
    ['padded base64url', { keys: [{ kid: 'k1', k: key(32) + '=' }] }, TypeError],
    ['standard base64 characters', { keys: [{ kid: 'k1', k: key(32).replace(/.$/, '+') }] }, TypeError],
    [
      'a non-canonical last character (the same 32 bytes to a lenient decoder)',
      { keys: [{ kid: 'k1', k: nonCanonicalLastCharacter(key(32))[0]! }] },
      TypeError,
    ],
    [
      'a character outside the alphabet that a lenient decoder skips',
      { keys: [{ kid: 'k1', k: `${key(32).slice(0, 20)}*${key(32).slice(20)}` }] },
      TypeError,
    ],
    [
      'a repeated kid',
      {
        keys: [
          { kid: 'k1', k: key(32) },
          { kid: 'k1', k: key(32) },
        ],
      },
      TypeError,
    ],
    ['a kid with a slash', { keys: [{ kid: 'a/b', k: key(32) }] }, TypeError],
    ['a numeric k', { keys: [{ kid: 'k1', k: 42 }] }, TypeError],
    ['no keys array', { key: 'x' }, TypeError],
  ])('refuses %s at construction', async (_label, content, type) => {
    const file = join(dir, `bad-${Math.random()}.json`);
    writeFileSync(file, JSON.stringify(content));
    const error = await KeyRing.fromFile(file).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(type);
    expect(String((error as Error).message)).not.toContain(key(32));
  });

  it('refuses a file that is not JSON, and a missing file, naming the file', async () => {
    const file = join(dir, 'garbage.json');
    writeFileSync(file, 'not json');
    await expect(KeyRing.fromFile(file)).rejects.toThrow(/not valid JSON/);
    await expect(KeyRing.fromFile(join(dir, 'missing.json'))).rejects.toThrow(/ENOENT/);
  });

  it('gives distinct principal tags to principals that differ only by a lone surrogate', async () => {
    const ring = await KeyRing.random();
    expect(KeyRing.principalTag(ring.sealing, 'a\uD800')).not.toBe(KeyRing.principalTag(ring.sealing, 'a\uFFFD'));
    expect(KeyRing.principalTag(ring.sealing, 'alice')).toBe(KeyRing.principalTag(ring.sealing, 'alice'));
  });
});

describe('key rotation in three phases', () => {
  it('opens a state sealed under the old key during the overlap and refuses it once the old key is dropped', async () => {
    const oldKey = KeyRing.generateSpec('old');
    const newKey = KeyRing.generateSpec('new');
    const seal = (specs: (typeof oldKey)[]) =>
      KeyRing.fromSpecs(specs).then((keys) => new Sealer({ keys, audience: 'a', ttlSeconds: 300 }));
    const phase0 = await seal([oldKey]);
    const phase1 = await seal([oldKey, newKey]); // every replica learns the new key; old still seals
    const phase2 = await seal([newKey, oldKey]); // new seals; old still opens
    const phase3 = await seal([newKey]); // one TTL later: old dropped
    const { state: underOld } = await phase0.seal(input);
    const { state: underOldInPhase1 } = await phase1.seal(input);
    const { state: underNew } = await phase2.seal(input);
    const ctx = { principal: 'local', nowMs: NOW };
    await expect(phase1.open(underOld, ctx)).resolves.toMatchObject({ tool: 'delete_file' });
    await expect(phase2.open(underOld, ctx)).resolves.toMatchObject({ tool: 'delete_file' });
    await expect(phase2.open(underOldInPhase1, ctx)).resolves.toMatchObject({ tool: 'delete_file' });
    await expect(phase0.open(underNew, ctx)).rejects.toMatchObject({ reason: 'unknown-key' });
    await expect(phase3.open(underNew, ctx)).resolves.toMatchObject({ tool: 'delete_file' });
    await expect(phase3.open(underOld, ctx)).rejects.toBeInstanceOf(StateRefusedError);
    await expect(phase3.open(underOld, ctx)).rejects.toMatchObject({ reason: 'unknown-key' });
  });
});

describe('Sealer', () => {
  it.each([0, -1, Infinity, NaN, 2.5])('refuses ttlSeconds %s at construction', async (ttlSeconds) => {
    const keys = await KeyRing.random();
    expect(() => new Sealer({ keys, audience: 'a', ttlSeconds })).toThrow(RangeError);
  });

  it('refuses an empty audience at construction', async () => {
    const keys = await KeyRing.random();
    expect(() => new Sealer({ keys, audience: '', ttlSeconds: 60 })).toThrow(TypeError);
  });

  it('is expired at exactly exp and open one millisecond before', async () => {
    const sealer = new Sealer({ keys: await KeyRing.random(), audience: 'a', ttlSeconds: 60 });
    const { state, claims } = await sealer.seal(input);
    expect(claims.exp - claims.iat).toBe(60);
    await expect(sealer.open(state, { principal: 'local', nowMs: claims.exp * 1000 })).rejects.toMatchObject({
      reason: 'expired',
    });
    await expect(sealer.open(state, { principal: 'local', nowMs: claims.exp * 1000 - 1 })).resolves.toMatchObject({
      jti: claims.jti,
    });
  });

  it('refuses a state sealed with a state typ of another kind: a plain JWE of the same key without our claims', async () => {
    const keys = await KeyRing.random();
    const sealer = new Sealer({ keys, audience: 'a', ttlSeconds: 60 });
    const { EncryptJWT } = await import('jose');
    const foreign = await new EncryptJWT({ tool: 'delete_file' })
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: keys.sealing.kid, typ: 'mcp-confirm-state+jwt' })
      .setAudience('a')
      .setSubject(KeyRing.principalTag(keys.sealing, 'local'))
      .setIssuedAt(NOW / 1000)
      .setExpirationTime(NOW / 1000 + 60)
      .setJti('x')
      .encrypt(keys.sealing.cryptoKey);
    await expect(sealer.open(foreign, { principal: 'local', nowMs: NOW })).rejects.toMatchObject({ reason: 'claims' });
  });
});
