/**
 * Compact JWEs (RFC 7516 §7.1, `dir` + `A256GCM`) assembled by hand over
 * `node:crypto`, as someone holding the key could: any protected header
 * bytes, any IV length. Used to forge the states the opener must refuse, and
 * (with our exact header) as their controls.
 */
import { createCipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import type { KeySpec } from '../../src/state/keyRing.js';

/** The protected header text mcp-confirm writes for `kid`, as the earlier jose-based version wrote it. */
export function ourHeaderText(kid: string): string {
  return `{"alg":"dir","enc":"A256GCM","kid":${JSON.stringify(kid)},"typ":"mcp-confirm-state+jwt"}`;
}

/** The `node:crypto` secret key of a key spec (tests only). */
export function secretKeyOf(spec: KeySpec): KeyObject {
  return createSecretKey(Buffer.from(spec.k, 'base64url'));
}

/**
 * Seals `plaintext` with AES-256-GCM under `key` into a compact JWE whose protected header is
 * exactly the UTF-8 of `headerText`; the AAD is the ASCII of its base64url encoding.
 *
 * @param options.ivBytes - IV length in bytes (default 12, the only length mcp-confirm accepts).
 */
export function assembleJwe(
  headerText: string,
  plaintext: Uint8Array,
  key: KeyObject,
  options: { ivBytes?: number } = {},
): string {
  const encodedHeader = Buffer.from(headerText, 'utf8').toString('base64url');
  const iv = randomBytes(options.ivBytes ?? 12);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
  cipher.setAAD(Buffer.from(encodedHeader, 'ascii'));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return [
    encodedHeader,
    '',
    iv.toString('base64url'),
    ciphertext.toString('base64url'),
    cipher.getAuthTag().toString('base64url'),
  ].join('.');
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * The other spellings of one base64url part that Node's lenient decoder reads as the same bytes:
 * the last character with non-zero unused bits (none when the part's length is a multiple of 4).
 */
export function nonCanonicalLastCharacter(part: string): string[] {
  const bytes = Buffer.from(part, 'base64url');
  const head = part.slice(0, -1);
  return [...ALPHABET]
    .filter((c) => c !== part.at(-1) && Buffer.from(head + c, 'base64url').equals(bytes))
    .map((c) => head + c);
}

/** The state with part `index` replaced by `f(part)`. */
export function withPart(state: string, index: number, f: (part: string) => string): string {
  const parts = state.split('.');
  parts[index] = f(parts[index]!);
  return parts.join('.');
}

/** The state with bit `bit` of part `index`'s decoded bytes flipped, re-encoded canonically. */
export function flipBit(state: string, index: number, bit: number): string {
  return withPart(state, index, (part) => {
    const bytes = Buffer.from(part, 'base64url');
    bytes[bit >> 3] = bytes[bit >> 3]! ^ (0x80 >> (bit & 7));
    return bytes.toString('base64url');
  });
}

/** A protected header we never write, for a state re-sealed under our key; `deflate`: the plaintext is deflated (`zip: DEF`). */
export interface HeaderVariant {
  label: string;
  text: string;
  deflate?: boolean;
}

/**
 * Protected headers that are not byte for byte the one we write for `kid` (BUG-17): extra members,
 * duplicate members, another order, spacing or spelling. Each is well-formed JSON naming `dir`, `A256GCM` and `kid`.
 */
export function headerVariants(kid: string): HeaderVariant[] {
  const k = JSON.stringify(kid);
  const typ = '"mcp-confirm-state+jwt"';
  const ours = `"alg":"dir","enc":"A256GCM","kid":${k},"typ":${typ}`;
  return [
    { label: '"zip":"DEF" added (plaintext deflated)', text: `{${ours},"zip":"DEF"}`, deflate: true },
    { label: '"crit":["exp"] and "exp" added', text: `{${ours},"crit":["exp"],"exp":1}` },
    { label: '"cty":"JWT" added', text: `{${ours},"cty":"JWT"}` },
    { label: '"jku" added', text: `{${ours},"jku":"https://attacker.example/jwks.json"}` },
    { label: '"jwk" added', text: `{${ours},"jwk":{"kty":"oct","k":"AAAA"}}` },
    { label: '"x5u" added', text: `{${ours},"x5u":"https://attacker.example/cert.pem"}` },
    { label: '"p2c" added', text: `{${ours},"p2c":1000000}` },
    { label: '"epk" added', text: `{${ours},"epk":{"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA"}}` },
    { label: 'a duplicate "typ" member', text: `{${ours},"typ":${typ}}` },
    {
      label: 'a duplicate "kid" member, another kid first',
      text: `{"alg":"dir","enc":"A256GCM","kid":"other","kid":${k},"typ":${typ}}`,
    },
    { label: 'the members in another order', text: `{"enc":"A256GCM","alg":"dir","kid":${k},"typ":${typ}}` },
    { label: 'a space after every colon', text: `{"alg": "dir","enc": "A256GCM","kid": ${k},"typ": ${typ}}` },
    { label: 'a trailing newline', text: `{${ours}}\n` },
    { label: 'a leading byte order mark', text: `\uFEFF{${ours}}` },
    {
      label: 'an escaped spelling of the same "alg" value',
      text: `{"alg":"\\u0064ir","enc":"A256GCM","kid":${k},"typ":${typ}}`,
    },
  ];
}
