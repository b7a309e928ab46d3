/**
 * Strict reading of unpadded base64url (RFC 4648 §5, as JOSE uses it: RFC 7515 §2).
 *
 * `Buffer.from(text, 'base64url')` is lenient: it skips characters outside the
 * alphabet, accepts padding, and ignores the unused low bits of the last
 * character, so many texts decode to the same bytes. Here one byte string has
 * exactly one accepted spelling: the alphabet and the length are checked, then
 * the bytes are encoded again and must give the same text. The coding itself
 * is Node's (`Buffer`).
 *
 * @module
 */

const ALPHABET = /^[A-Za-z0-9_-]*$/;

/**
 * Decodes canonical unpadded base64url.
 *
 * @param text - the encoded text.
 * @returns the bytes, or `undefined` when `text` has a character outside `A-Z a-z 0-9 - _`
 *   (padding `=` included), a length of 1 modulo 4, or non-zero unused bits in its last character.
 */
export function decodeBase64url(text: string): Buffer | undefined {
  if (text.length % 4 === 1 || !ALPHABET.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}
