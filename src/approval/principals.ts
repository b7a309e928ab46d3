/**
 * The principal strings an approver may approve for, apart from the approvers file (so parsing the
 * command line does not load the file's module and `node:crypto`): `local`, or a verified token's
 * issuer and subject.
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

/** A principal for people: `local`, or `SUB (issuer ISS)` for a token's. */
export function describePrincipal(principal: string): string {
  try {
    const p = JSON.parse(principal) as unknown;
    if (Array.isArray(p) && p.length === 3 && p[0] === 'jwt' && typeof p[1] === 'string' && typeof p[2] === 'string') return `${p[2]} (issuer ${p[1]})`;
  } catch {
    // not a token principal
  }
  return principal;
}
