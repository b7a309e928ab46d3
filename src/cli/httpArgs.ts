/**
 * The HTTP flags of `mcp-confirm` (`--http`, `--allowed-hosts`, `--auth-issuer`,
 * `--auth-jwks`, `--resource`, `--drain-seconds`), validated into an {@link HttpSpec}.
 * Kept apart from `args.ts` so that serving options of other kinds merge easily.
 *
 * @module
 */
import { parseAllowedHosts, parseBindAddress, type BindAddress } from '../http/bind.js';

/** The `parseArgs` option table of the HTTP flags. */
export const HTTP_OPTIONS = {
  http: { type: 'string' },
  'allowed-hosts': { type: 'string' },
  'auth-issuer': { type: 'string' },
  'auth-jwks': { type: 'string' },
  resource: { type: 'string' },
  'drain-seconds': { type: 'string' },
} as const;

export const HTTP_USAGE = `HTTP (Streamable HTTP at /mcp instead of stdio):
  --http HOST:PORT       Listen on HOST:PORT ([::1]:PORT for IPv6; port 0 picks a free one).
                         Without --auth-*, only a loopback address (every caller is one principal).
  --auth-issuer URL      OAuth 2.1 resource server: the issuer every token's iss must equal.
  --auth-jwks PATH|URL   The issuer's public JWK set (a file, or an https URL).
  --resource URL         The public URL clients use (token audience, RFC 9728 resource).
                         Default http://HOST:PORT/mcp; required for a wildcard bind (0.0.0.0, [::]).
  --allowed-hosts LIST   Extra hostnames (comma-separated) a request's Host/Origin may name.
  --drain-seconds N      On SIGTERM, how long in-flight requests may finish (0-600). Default: 10.`;

/** The HTTP serving settings. */
export interface HttpSpec {
  bind: BindAddress;
  /** The resource URL given with `--resource`; else derived once the port is known. */
  resource: URL | undefined;
  allowedHosts: string[];
  auth: { issuer: string; jwks: string } | undefined;
  drainMs: number;
}

type HttpValues = { [K in keyof typeof HTTP_OPTIONS]?: string | undefined };

/**
 * Validates the HTTP flags. Returns undefined when `--http` is absent.
 *
 * @throws {TypeError} naming the flag: an HTTP flag without `--http`, a bad
 *   address, only one of `--auth-issuer`/`--auth-jwks`, a malformed URL, a
 *   wildcard bind without `--resource`, a non-loopback bind without auth.
 */
export function parseHttpSpec(values: HttpValues): HttpSpec | undefined {
  if (values.http === undefined) {
    const stray = (Object.keys(HTTP_OPTIONS) as Array<keyof typeof HTTP_OPTIONS>).find((k) => values[k] !== undefined);
    if (stray) throw new TypeError(`--${stray} needs --http HOST:PORT`);
    return undefined;
  }
  const bind = parseBindAddress(values.http);
  const issuer = values['auth-issuer'];
  const jwks = values['auth-jwks'];
  if ((issuer === undefined) !== (jwks === undefined)) throw new TypeError('--auth-issuer and --auth-jwks go together');
  if (issuer !== undefined) {
    let url: URL;
    try {
      url = new URL(issuer);
    } catch {
      throw new TypeError(`--auth-issuer must be a URL, got ${JSON.stringify(issuer)}`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new TypeError('--auth-issuer must be an http(s) URL');
  }
  let resource: URL | undefined;
  if (values.resource !== undefined) {
    try {
      resource = new URL(values.resource);
    } catch {
      throw new TypeError(`--resource must be a URL, got ${JSON.stringify(values.resource)}`);
    }
    if (resource.protocol !== 'https:' && resource.protocol !== 'http:')
      throw new TypeError('--resource must be an http(s) URL');
    if (resource.hash !== '') throw new TypeError('--resource must not have a fragment');
  } else if (bind.wildcard) {
    throw new TypeError('--resource URL is required with a wildcard bind (the public URL clients use)');
  }
  const auth = issuer !== undefined && jwks !== undefined ? { issuer, jwks } : undefined;
  if (!auth && !bind.loopback) {
    throw new TypeError(
      `--http ${values.http} is not a loopback address: serving it without --auth-issuer/--auth-jwks would let anyone on the network delete files`,
    );
  }
  const allowedHosts = values['allowed-hosts'] !== undefined ? parseAllowedHosts(values['allowed-hosts']) : [];
  let drainMs = 10_000;
  if (values['drain-seconds'] !== undefined) {
    const s = values['drain-seconds'];
    if (!/^[0-9]{1,3}$/.test(s) || Number(s) > 600)
      throw new TypeError(`--drain-seconds must be a whole number from 0 to 600, got ${JSON.stringify(s)}`);
    drainMs = Number(s) * 1000;
  }
  return { bind, resource, allowedHosts, auth, drainMs };
}
