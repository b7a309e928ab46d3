/**
 * The offer line of a grant (src/guard/grants.ts `grantOffer` with the generic `defaultOfferLine`):
 * the number of calls it allows, in words the human reads.
 */
import { describe, expect, it } from 'vitest';
import { checkGrantPolicy } from '../../src/grant/matchers.js';
import { grantOffer } from '../../src/guard/grants.js';

// A checked policy has at least 2 uses (checkGrantPolicy refuses 1); the line's wording for 1 is checked on a
// policy made by hand from a checked one.
const offerLine = (maxUses: number): string | undefined =>
  grantOffer(
    'write_file',
    {
      ...checkGrantPolicy(
        { arguments: { path: 'same-directory', content: 'any' }, maxUses: 2, maxSeconds: 900 },
        'the test',
      ),
      maxUses,
    },
    { path: '/srv/cache/a.tmp', content: 'x' },
    null,
    undefined,
    undefined,
  )?.line;

describe('the generic grant offer line', () => {
  it('says "at most 1 call in all" for a grant of one use, not "1 calls" (control: 20 uses is "20 calls")', () => {
    expect(offerLine(1)).toContain('for 15 minutes, at most 1 call in all; each is still checked before it runs.');
    expect(offerLine(1)).not.toContain('1 calls');
    expect(offerLine(20)).toContain('for 15 minutes, at most 20 calls in all; each is still checked before it runs.');
  });
});
