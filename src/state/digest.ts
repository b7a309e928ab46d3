/**
 * Digests that bind a sealed state to one call: SHA-256 (FIPS 180-4) of the
 * RFC 8785 JSON Canonicalization Scheme form of a value, base64url.
 *
 * @module
 */
import * as nodeCrypto from 'node:crypto';
import canonicalize from 'canonicalize';
import { ConfirmBadArgumentError } from '../errors.js';

/**
 * SHA-256 of the RFC 8785 canonical JSON of `value`, unpadded base64url (43 characters).
 *
 * @param value - any JSON value (the tool's parsed arguments, or `{message, requestedSchema}`).
 * @param what - what the value is, for the error message.
 * @throws {ConfirmBadArgumentError} `ERR_CONFIRM_BAD_ARGUMENT` when the value has no canonical form:
 *   a lone surrogate in a string, `NaN`, `Infinity`, a `BigInt`, `undefined` at the top.
 */
export function canonicalDigest(value: unknown, what = 'arguments'): string {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch {
    text = undefined;
  }
  if (typeof text !== 'string') throw new ConfirmBadArgumentError(`the ${what} have no canonical JSON form (RFC 8785)`);
  return sha256Base64url(text);
}

/**
 * SHA-256 of the UTF-8 of `text`, unpadded base64url: Node's one-shot `crypto.hash` where the
 * runtime has it (Node 20.12+, 21.7+; no Hash object per call), else `createHash`.
 */
const sha256Base64url: (text: string) => string =
  typeof nodeCrypto.hash === 'function'
    ? (text) => nodeCrypto.hash('sha256', text, 'base64url')
    : (text) => nodeCrypto.createHash('sha256').update(text, 'utf8').digest('base64url');
