/**
 * Strict reading of unpadded base64url (RFC 4648 §5, as JOSE uses it: RFC 7515 §2).
 *
 * `Buffer.from(text, 'base64url')` is lenient: it skips characters outside the
 * alphabet, accepts padding, and ignores the unused low bits of the last
 * character, so many texts decode to the same bytes. Here one byte string has
 * exactly one accepted spelling: the bytes are encoded again and must give the
 * same text. The coding itself is Node's (`Buffer`).
 *
 * @module
 */

/**
 * Decodes canonical unpadded base64url.
 *
 * The text is decoded by Node and the bytes encoded again: only when that gives back the very
 * same text is it accepted. That one comparison refuses everything a lenient decoder would let
 * through: a character outside `A-Z a-z 0-9 - _` (skipped by the decoder, so the text comes back
 * shorter; or, from U+0100 up, read as the character of its low byte, e.g. `\u0141` as `A`, so it
 * comes back as that character), `+` and `/` (read as `-` and `_`, written back as those), padding `=`, a length of 1
 * modulo 4 (the lone character is dropped), and non-zero unused bits in the last character
 * (written back as zero bits).
 *
 * @param text - the encoded text.
 * @returns the bytes, or `undefined` when `text` is not the canonical unpadded base64url of any bytes.
 */
export function decodeBase64url(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}
