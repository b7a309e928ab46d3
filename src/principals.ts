/**
 * Principals: who asked for a call, as one string. `local` (stdio, or `--http` without tokens), or
 * for a verified bearer token the JSON text `["jwt", ISS, SUB]` of its issuer and subject. The one
 * definition of that string: `src/http/` computes it for a call, `src/approval/` stores it in an
 * approver's `principals` and shows it on the pages, and the CLI writes it for
 * `approvers enroll --principal`. Imports nothing, so parsing the command line loads no more.
 *
 * @module
 */

/**
 * The principal string of a verified token's issuer and subject, as `mcp-confirm --http` with
 * `--auth-issuer` computes it for a call (`jwtPrincipalOf` in `mcp-confirm/http`): what
 * `approvers enroll --principal ISS SUB` writes into an approver's `principals`.
 */
export function jwtPrincipalFor(iss: string, sub: string): string {
  return JSON.stringify(['jwt', iss, sub]);
}

/** The issuer and subject of a {@link jwtPrincipalFor} string; `undefined` for any other principal (`local`). */
export function jwtPrincipalParts(principal: string): { iss: string; sub: string } | undefined {
  let p: unknown;
  try {
    p = JSON.parse(principal);
  } catch {
    return undefined; // not a token principal
  }
  if (Array.isArray(p) && p.length === 3 && p[0] === 'jwt' && typeof p[1] === 'string' && typeof p[2] === 'string')
    return { iss: p[1], sub: p[2] };
  return undefined;
}

/** A principal for people: `local`, or `SUB (issuer ISS)` for a token's. */
export function describePrincipal(principal: string): string {
  const jwt = jwtPrincipalParts(principal);
  return jwt === undefined ? principal : `${jwt.sub} (issuer ${jwt.iss})`;
}
