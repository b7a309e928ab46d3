/**
 * Look-alikes a security tester found with no warning or escape: compatibility characters (not
 * NFKC), fake escapes made of other angle brackets, visually blank code points; and real
 * non-Latin names that always warned inside a Latin path (per-segment script check).
 */
import { describe, expect, it } from 'vitest';
import {
  ANGLE_LOOKALIKES,
  BLANK_LOOKING,
  WARNING,
  question,
  questionWith,
  renderValue,
  renderValueParts,
  scriptMix,
  valueWarnings,
} from '../../src/prompt/render.js';
import { decodeBody } from './helpers.js';

const hex = (ch: string): string => ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');

describe('compatibility look-alikes (UAX #15 NFKC)', () => {
  it('warns for mathematical monospace 𝚌𝚊𝚌𝚑𝚎.txt and full-width ｃａｃｈｅ.txt', () => {
    expect(renderValue('\u{1D68C}\u{1D68A}\u{1D68C}\u{1D691}\u{1D68E}.txt')).toBe(
      '`\u{1D68C}\u{1D68A}\u{1D68C}\u{1D691}\u{1D68E}.txt` (warning: uses compatibility look-alike characters, not NFKC)',
    );
    expect(renderValue('ｃａｃｈｅ.txt')).toBe(
      '`ｃａｃｈｅ.txt` (warning: uses compatibility look-alike characters, not NFKC)',
    );
  });

  it('warns for ligatures, superscripts and other compatibility forms', () => {
    for (const v of ['\uFB01le.txt', 'm\u00B2.txt', '\u2460.txt', '\u3392.pdf']) {
      expect(valueWarnings(v), v).toEqual([WARNING.notNfkc]);
    }
  });

  it('shows a compatibility look-alike of path syntax as an escape, which the NFKC check does not count (file\u2024txt)', () => {
    expect(renderValue('file\u2024txt')).toBe('`file⟨U+2024⟩txt`');
  });

  it('does not warn for ordinary names in any script, nor count the escaped code points (NBSP, Hangul filler)', () => {
    for (const v of [
      'cache.txt',
      'café.txt',
      'отчёт.txt',
      'שלום.txt',
      '日本語のファイル.txt',
      '한국어.txt',
      'नमस्ते.txt',
      '👍🏽 🇫🇷.txt',
      'a\u00A0b',
      'cache\u3164.txt',
    ]) {
      expect(valueWarnings(v), v).toEqual([]);
    }
  });

  it('gives a decomposed name the NFC warning only, not the NFKC one as well', () => {
    expect(valueWarnings('cafe\u0301.txt')).toEqual([WARNING.notNfc]);
    expect(valueWarnings('ﬁcafe\u0301.txt')).toEqual([WARNING.notNfc, WARNING.notNfkc]);
  });
});

describe('fake escapes: every bracket that looks like ⟨ or ⟩ is escaped', () => {
  it('shows 〈U+202E〉 and ❬U+0020❭ as escapes, so they cannot pass for ⟨U+202E⟩ and ⟨U+0020⟩', () => {
    expect(renderValue('invoice_\u3008U+202E\u3009fdp.exe')).toBe('`invoice_⟨U+3008⟩U+202E⟨U+3009⟩fdp.exe`');
    expect(renderValue('a\u276CU+0020\u276Db.txt')).toBe('`a⟨U+276C⟩U+0020⟨U+276D⟩b.txt`');
    // The real escape of two spaces and its fake no longer look alike.
    expect(renderValueParts('a  b').body).toBe('a⟨U+0020⟩⟨U+0020⟩b');
    expect(renderValueParts('a\u276CU+0020\u276D\u276CU+0020\u276Db').body).toBe(
      'a⟨U+276C⟩U+0020⟨U+276D⟩⟨U+276C⟩U+0020⟨U+276D⟩b',
    );
  });

  it('escapes each bracket of the documented set, and the set holds the ones the tester listed', () => {
    const listed = [
      0x2039, 0x203a, 0x2329, 0x232a, 0x276c, 0x276d, 0x276e, 0x276f, 0x2770, 0x2771, 0x27e8, 0x27e9, 0x27ea, 0x27eb,
      0x2989, 0x298a, 0x2991, 0x2992, 0x2993, 0x2994, 0x2995, 0x2996, 0x29fc, 0x29fd, 0x3008, 0x3009, 0xfe3f, 0xfe40,
      0xfe64, 0xfe65, 0xff1c, 0xff1e,
    ];
    for (const cp of listed) expect(ANGLE_LOOKALIKES).toContain(String.fromCodePoint(cp));
    for (const ch of ANGLE_LOOKALIKES) expect(renderValueParts(`a${ch}b`).body).toBe(`a⟨U+${hex(ch)}⟩b`);
  });

  it('leaves ASCII < >, « » and CJK 《 》 as they are (ordinary in names)', () => {
    expect(renderValue('<b> «titre» 《红楼梦》.txt')).toBe('`<b> «titre» 《红楼梦》.txt`');
  });

  it('never shows ⟨ or ⟩ outside an escape, whatever the value', () => {
    const value = `⟩⟨${ANGLE_LOOKALIKES}U+0041⟩`;
    const { body } = renderValueParts(value, { maxGraphemes: 10_000 });
    expect(body.replace(/⟨U\+[0-9A-F]{4,6}⟩/g, '')).not.toMatch(/[⟨⟩]/);
    expect(decodeBody(body)).toBe(value);
  });
});

describe('visually blank code points', () => {
  it('escapes MUSICAL SYMBOL NULL NOTEHEAD (U+1D159) and the other blank-looking code points', () => {
    expect(renderValue('cache\u{1D159}.txt')).toBe('`cache⟨U+1D159⟩.txt`');
    for (const ch of BLANK_LOOKING) expect(renderValueParts(`a${ch}b`).body).toBe(`a⟨U+${hex(ch)}⟩b`);
  });

  it('already escapes the other entries of public invisible-character lists (Cf, Zs, default-ignorable)', () => {
    const listed = [
      0x00a0, 0x00ad, 0x034f, 0x061c, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x180e, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
      0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x202f, 0x205f, 0x2060,
      0x2061, 0x2062, 0x2063, 0x2064, 0x2065, 0x206a, 0x206b, 0x206c, 0x206d, 0x206e, 0x206f, 0x2800, 0x3000, 0x3164,
      0xfeff, 0xffa0, 0xfffc, 0x1d159, 0x1d173, 0x1d174, 0x1d175, 0x1d176, 0x1d177, 0x1d178, 0x1d179, 0x1d17a, 0xe0020,
      0xe0000, 0xe0001, 0xe007f, 0xe0100, 0xe01ef, 0xe0fff,
    ];
    for (const cp of listed) {
      const ch = String.fromCodePoint(cp);
      expect(renderValueParts(`a${ch}b`).body, cp.toString(16)).toBe(`a⟨U+${hex(ch)}⟩b`);
    }
  });
});

describe('the mixed-script check per path component (segments)', () => {
  const paths = questionWith({ segments: '/' });

  it('does not warn for a Hebrew or Greek file name under a Latin directory', () => {
    expect(paths`Delete ${'/tmp/r/שלום.txt'}?`).toBe('Delete `/tmp/r/שלום.txt`?');
    expect(paths`Delete ${'/tmp/r/αρχείο.txt'}?`).toBe('Delete `/tmp/r/αρχείο.txt`?');
    expect(paths`Delete ${'/home/me/документы/отчёт.txt'}?`).toBe('Delete `/home/me/документы/отчёт.txt`?');
  });

  it("still warns when one component mixes scripts, naming only that component's scripts", () => {
    expect(paths`Delete ${'/tmp/r/p\u0430ypal.txt'}?`).toBe(
      'Delete `/tmp/r/p\u0430ypal.txt` (warning: mixes Latin and Cyrillic letters)?',
    );
    expect(valueWarnings('/tmp/שלום/p\u0430ypal.txt', { segments: '/' })).toEqual(['mixes Latin and Cyrillic letters']);
    expect(valueWarnings('/tmp/r/\u0391pple.pdf', { segments: '/' })).toEqual(['mixes Greek and Latin letters']);
  });

  it('checks the whole value as one piece without the option (the old behaviour)', () => {
    expect(valueWarnings('/tmp/r/שלום.txt')).toEqual(['mixes Latin and Hebrew letters']);
    expect(question`Delete ${'/tmp/r/αρχείο.txt'}?`).toBe(
      'Delete `/tmp/r/αρχείο.txt` (warning: mixes Latin and Greek letters)?',
    );
  });

  it("reports per-piece results from scriptMix, and ignores each piece's ASCII extension", () => {
    // An all-ASCII piece is skipped, as an all-ASCII value is.
    expect(scriptMix('/tmp/r/שלום.txt', '/')).toEqual({ mixed: false, scripts: ['Hebrew'] });
    expect(scriptMix('/tmp/ש.d/x', '/').mixed).toBe(false);
    expect(scriptMix('/a/pаy/b', '/')).toEqual({ mixed: true, scripts: ['Latin', 'Cyrillic'] });
  });

  it('refuses an empty or non-string separator', () => {
    expect(() => questionWith({ segments: '' })).toThrow(RangeError);
    expect(() => renderValue('x', { segments: 1 as unknown as string })).toThrow(RangeError);
  });
});

// The whole-script check (TR #39 §4) is tested in confusables.test.ts.
