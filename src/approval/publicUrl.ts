/**
 * The public URL of the approval and enrolment pages when they are served over HTTP: its origin is
 * the WebAuthn origin, its host name the RP ID. A module of its own, free of `node:http`, so the
 * command-line parser can check it without loading a server.
 *
 * @module
 */
import { isIP } from 'node:net';
import { ConfigError } from '../errors.js';

/** The words the refusals of {@link parsePublicUrl} begin with (a command line names its flag instead). */
const SUBJECT = 'the public URL';

/** A {@link ConfigError} `ERR_CONFIG_PUBLIC_URL`: the public URL, then what is wrong with it. */
function refused(problem: string): ConfigError {
  return new ConfigError('ERR_CONFIG_PUBLIC_URL', `${SUBJECT} ${problem}`, { subject: SUBJECT });
}

/**
 * Checks a public URL for the approval and enrolment pages served over HTTP: an `http:` or
 * `https:` origin (`scheme://host[:port]`, optionally with a trailing `/`), no user, path, query or
 * fragment, and a DNS name for host (the WebAuthn RP ID is the host name, and an IP address cannot
 * be one: W3C Web Authentication Level 3, §5.1.4.1 / the "valid domain" of the RP ID).
 *
 * @returns the URL (its `origin` is the WebAuthn origin, its `hostname` the RP ID).
 * @throws {ConfigError} `ERR_CONFIG_PUBLIC_URL` saying what is wrong (`subject`: `the public URL`).
 */
export function parsePublicUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refused(`must be a URL such as https://mcp.example.com, got ${JSON.stringify(text)}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw refused(`must be an http(s) URL, got ${JSON.stringify(text)}`);
  if (url.username !== '' || url.password !== '') throw refused('must not carry a user name or password');
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    throw refused(
      'must be an origin only (scheme://host[:port]), without a path, query or fragment; the pages live at /approve/… and /enroll/…',
    );
  }
  const bare = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(bare) !== 0) {
    throw refused(
      `must name a host by DNS name (it becomes the WebAuthn RP ID, which cannot be an IP address), got ${url.hostname}`,
    );
  }
  return url;
}

/** Whether a browser treats `http://host` as a secure context without flags (localhost and *.localhost). */
export function isLocalhostName(hostname: string): boolean {
  return hostname === 'localhost' || hostname.endsWith('.localhost');
}
