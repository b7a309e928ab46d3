/**
 * The start-up warning for an approvers file of no use to this server (src/cli/approvalStart.ts):
 * the stdio case runs through the CLI in test/e2e/passkey.test.ts; here, the issuer cases.
 */
import { describe, expect, it } from 'vitest';
import type { ApproversFile } from '../../src/approval/approvers.js';
import { jwtPrincipalFor } from '../../src/principals.js';
import { unusableApproversWarning } from '../../src/cli/approvalStart.js';

function file(...principals: string[][]): ApproversFile {
  return {
    version: 1,
    rpId: 'mcp.example.com',
    approvers: principals.map((p, i) => ({
      name: `a${i}`,
      credentialId: `c${i}`,
      publicKey: 'pk',
      counter: 0,
      transports: [],
      principals: p,
      enrolledAt: '2026-12-01T00:00:00.000Z',
    })),
  } as ApproversFile;
}

describe('unusableApproversWarning', () => {
  it('warns when every approver is for another issuer string (a trailing slash is another issuer); control: one approver of the exact issuer silences it', () => {
    const w = unusableApproversWarning(
      file([jwtPrincipalFor('https://auth.example.com/', 'alice')]),
      'https://auth.example.com',
    );
    expect(w).toContain('token principals of issuer "https://auth.example.com" (--auth-issuer)');
    expect(w).toContain('alice (issuer https://auth.example.com/)');
    expect(
      unusableApproversWarning(
        file(
          [jwtPrincipalFor('https://auth.example.com/', 'alice')],
          [jwtPrincipalFor('https://auth.example.com', 'bob')],
        ),
        'https://auth.example.com',
      ),
    ).toBeUndefined();
  });

  it('warns for a stdio (local) file served with tokens, and for a token file served without; controls: each served as enrolled', () => {
    expect(unusableApproversWarning(file(['local']), 'https://auth.example.com')).toContain(
      'the approvers are enrolled for: local',
    );
    expect(unusableApproversWarning(file([jwtPrincipalFor('https://i.example', 'u')]), undefined)).toContain(
      'the principal local (no tokens)',
    );
    expect(unusableApproversWarning(file(['local']), undefined)).toBeUndefined();
    expect(
      unusableApproversWarning(file([jwtPrincipalFor('https://i.example', 'u')]), 'https://i.example'),
    ).toBeUndefined();
  });
});
