/**
 * The HTTP bind address (`HOST:PORT`), whether it is loopback, and the
 * hostnames a request's `Host` and `Origin` may name (DNS-rebinding defence,
 * MCP spec 2026-07-28 basic/transports, "Security Warning").
 *
 * Pure functions over strings: no sockets, no I/O.
 *
 * @module
 */
import { BlockList, isIP } from 'node:net';
import { ConfigError } from '../errors.js';

/** A parsed `--http HOST:PORT`. */
export interface BindAddress {
  /** The host as given, without IPv6 brackets (`127.0.0.1`, `::1`, `localhost`, `0.0.0.0`). */
  host: string;
  /** The TCP port, 0 to 65535 (0: the system picks a free port). */
  port: number;
  /** The host as it appears in a URL or a `Host` header: IPv6 in brackets, names in lower case. */
  urlHost: string;
  /** A wildcard address (`0.0.0.0`, `::`): every interface. */
  wildcard: boolean;
  /** Every address it listens on is loopback (127.0.0.0/8, `::1`, `localhost`). */
  loopback: boolean;
}

/** The words the refusals of {@link parseBindAddress} begin with (a command line names its flag instead). */
const BIND_SUBJECT = 'the bind address';
/** The words the refusals of {@link parseAllowedHosts} begin with. */
const ALLOWED_HOSTS_SUBJECT = 'allowed hosts';

function bindError(rest: string): ConfigError {
  return new ConfigError('ERR_CONFIG_BIND_ADDRESS', `${BIND_SUBJECT}${rest}`, { subject: BIND_SUBJECT });
}

function allowedHostsError(rest: string): ConfigError {
  return new ConfigError('ERR_CONFIG_ALLOWED_HOSTS', `${ALLOWED_HOSTS_SUBJECT}${rest}`, {
    subject: ALLOWED_HOSTS_SUBJECT,
  });
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * Parses `HOST:PORT` (`127.0.0.1:8080`, `[::1]:8080`, `localhost:0`, `0.0.0.0:443`).
 *
 * @throws {ConfigError} `ERR_CONFIG_BIND_ADDRESS` naming what is wrong (`subject`: `the bind address`): no
 *   port, a port out of 0..65535, an empty or malformed host.
 */
export function parseBindAddress(spec: string): BindAddress {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]/]+)):([0-9]{1,5})$/.exec(spec);
  if (!m) throw bindError(` must be HOST:PORT (IPv6 in brackets, e.g. [::1]:8080), got ${JSON.stringify(spec)}`);
  const port = Number(m[3]);
  if (port > 65_535) throw bindError(` port must be 0 to 65535, got ${m[3]}`);
  const v6 = m[1];
  const host = (v6 ?? m[2] ?? '').toLowerCase();
  const family = isIP(host);
  if (v6 !== undefined && family !== 6) throw bindError(`: ${JSON.stringify(v6)} in brackets is not an IPv6 address`);
  if (family === 0 && !/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/.test(host)) {
    throw bindError(` host must be an IP address or a DNS name, got ${JSON.stringify(host)}`);
  }
  const wildcard = host === '0.0.0.0' || (family === 6 && normalizeV6(host) === '::');
  const loopback =
    host === 'localhost' ||
    (family === 4 && LOOPBACK.check(host, 'ipv4')) ||
    (family === 6 && LOOPBACK.check(host, 'ipv6'));
  return { host, port, urlHost: family === 6 ? `[${host}]` : host, wildcard, loopback };
}

function normalizeV6(host: string): string {
  // The WHATWG URL parser gives the canonical (compressed, lower-case) form.
  return new URL(`http://[${host}]/`).hostname.slice(1, -1);
}

/**
 * The hostnames a request's `Host` (and a present `Origin`) may name, in the
 * form the SDK's `hostHeaderValidationResponse` compares (port-agnostic, IPv6 in brackets):
 * the bound host unless it is a wildcard; for a loopback bind also `localhost`,
 * `127.0.0.1` and `[::1]`; the `--resource` URL's host; and every `--allowed-hosts` name.
 */
export function allowedHostnames(bind: BindAddress, resourceUrl: URL | undefined, extra: readonly string[]): string[] {
  const names = new Set<string>();
  if (!bind.wildcard) names.add(bind.urlHost);
  if (bind.loopback) for (const n of ['localhost', '127.0.0.1', '[::1]']) names.add(n);
  if (resourceUrl) names.add(resourceUrl.hostname);
  for (const n of extra) names.add(n.toLowerCase());
  return [...names];
}

/**
 * Parses `--allowed-hosts a.example,b.example`: comma-separated hostnames
 * without scheme or port (IPv6 in brackets).
 *
 * @throws {ConfigError} `ERR_CONFIG_ALLOWED_HOSTS` naming an entry that is not a bare hostname (`subject`:
 *   `allowed hosts`).
 */
export function parseAllowedHosts(spec: string): string[] {
  return spec.split(',').map((raw) => {
    const name = raw.trim().toLowerCase();
    let parsed: URL | undefined;
    try {
      parsed = new URL(`http://${name}/`);
    } catch {
      parsed = undefined;
    }
    if (name === '' || !parsed || parsed.hostname !== name || parsed.port !== '') {
      throw allowedHostsError(` entries must be bare hostnames (no scheme, port or path), got ${JSON.stringify(raw)}`);
    }
    return name;
  });
}
