import { describe, expect, it } from 'vitest';
import { JOINERS } from '../../src/prompt/cut.js';

const segmenter = new Intl.Segmenter('und', { granularity: 'grapheme' });
const count = (s: string): number => {
  let n = 0;
  for (const _ of segmenter.segment(s)) n += 1;
  return n;
};
/** Code points escaping always shows as ⟨U+XXXX⟩, so they never sit in a literal run. */
const ESCAPED = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Z}\p{Default_Ignorable_Code_Point}\p{White_Space}]/u;

describe('grapheme fast path', () => {
  it('lists every code point that joins a neighbour into one grapheme under the running ICU', () => {
    // If a code point neither joins "a" on either side nor itself, every run without JOINERS
    // breaks between all its code points (UAX #29: the remaining rules need such a code point).
    const missing: string[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const ch = String.fromCodePoint(cp);
      if (ESCAPED.test(ch) || JOINERS.test(ch)) continue;
      if (count(`a${ch}a`) !== 3 || count(ch + ch) !== 2) missing.push(cp.toString(16));
    }
    expect(missing).toEqual([]);
  });
});
