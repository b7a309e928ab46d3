/**
 * Path-syntax look-alikes (issue 8 part 4, BUG-21) and whole-script look-alikes of Latin, both
 * from Unicode TR #39 §4 confusables.txt (Unicode 13.0.0 as shipped by unhomoglyph 1.0.6).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CONFUSABLES_UNICODE_VERSION, PATH_SYNTAX_LOOKALIKES } from '../../src/prompt/confusablesData.js';
import {
  EMPTY_VALUE,
  WARNING,
  renderPath,
  renderValue,
  renderValueParts,
  valueWarnings,
} from '../../src/prompt/render.js';
import { latinLookalikeScript } from '../../src/prompt/scripts.js';
import { PATH_SYNTAX_TARGETS, generateConfusablesData } from './confusablesData.generate.js';
import { decodeBody } from './helpers.js';

const require = createRequire(import.meta.url);
const data = require('unhomoglyph/data.json') as Record<string, string>;
const esc = (ch: string): string => `⟨U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`;
const skeleton = (s: string): string => [...s.normalize('NFKD')].map((c) => data[c] ?? c).join('');
const members = [...PATH_SYNTAX_LOOKALIKES];
/** The shown text without its escapes, to look for raw code points. */
const raw = (body: string): string => (body === EMPTY_VALUE ? '' : body.replace(/⟨U\+[0-9A-F]{4,6}⟩/g, ''));
const isLetterOfAScript = (ch: string): boolean =>
  /^[\p{L}\p{N}\p{M}]$/u.test(ch) && !/^[\p{scx=Zyyy}\p{scx=Zinh}]$/u.test(ch);

describe('the confusable data', () => {
  it('is what the generator writes from confusables.txt of Unicode 13.0.0 (unhomoglyph 1.0.6)', () => {
    expect((require('unhomoglyph/package.json') as { version: string }).version).toBe('1.0.6');
    expect(CONFUSABLES_UNICODE_VERSION).toBe('13.0.0');
    const file = readFileSync(new URL('../../src/prompt/confusablesData.ts', import.meta.url), 'utf8');
    expect(file).toBe(generateConfusablesData(data));
  });

  it('holds exactly the non-ASCII code points whose skeleton is made of path syntax, the escape brackets or the ellipsis', () => {
    const allowed = new Set(PATH_SYNTAX_TARGETS.flatMap((t) => [...skeleton(t)]));
    expect([...allowed].sort()).toEqual([' ', '.', '/', ':', '\\', '~', '\u276C', '\u276D'].sort());
    for (const ch of members) {
      expect(ch.codePointAt(0)! >= 0x80, ch).toBe(true);
      expect(
        [...skeleton(ch)].every((c) => allowed.has(c)),
        esc(ch),
      ).toBe(true);
    }
    // Sources of the data itself, multi-character skeletons included, and NFKD forms.
    for (const ch of [
      '\u2215',
      '\u2044',
      '\u2216',
      '\u2236',
      '\u2025',
      '\u2026',
      '\u2AFD',
      '\u30CE',
      '\u4E3F',
      '\u0903',
      '\u0660',
      '\uFF0F',
      '\uFF0E',
    ]) {
      expect(members, esc(ch)).toContain(ch);
    }
    // The backtick's skeleton is the apostrophe: that class (’, “, ", י) is ordinary in names.
    for (const ch of ['\u2019', '\u201C', '"', '\u05D9']) expect(members).not.toContain(ch);
  });
});

describe('hard-3: a look-alike of path syntax is shown as an escape', () => {
  it('hard-3: a name with U+2215 DIVISION SLASH or U+2044 FRACTION SLASH never shows it raw', () => {
    expect(renderPath('/srv/notes\u2215thesis.txt')).toBe('`/srv/notes⟨U+2215⟩thesis.txt`');
    expect(renderPath('/srv/a\u2044b.txt')).toBe('`/srv/a⟨U+2044⟩b.txt`');
    expect(renderPath('/srv/notes/thesis.txt')).toBe('`/srv/notes/thesis.txt`');
  });

  it('escapes every symbol and punctuation of the set, and every letter of no particular script, in any context', () => {
    const always = members.filter((ch) => !isLetterOfAScript(ch));
    expect(always.length).toBeGreaterThan(60);
    for (const ch of always) {
      for (const v of [`a${ch}b`, `ノー${ch}ト`, `दु${ch}ख`, `ملف${ch}ملف`, ch]) {
        const body = renderValueParts(v).body;
        expect(raw(body).includes(ch), `${esc(ch)} in ${JSON.stringify(v)}`).toBe(false);
        expect(body).toContain(esc(ch));
      }
    }
  });

  it('escapes the ellipsis and the two-dot leader, so a value cannot imitate the cut mark', () => {
    expect(renderValue('a\u2026b.txt')).toBe('`a⟨U+2026⟩b.txt`');
    expect(renderValue('..\u2025/x')).toBe('`..⟨U+2025⟩/x`');
    const long = renderValueParts(`${'x'.repeat(100)}\u2026${'y'.repeat(100)}`);
    expect(long.cut).toBe(true);
    expect([...long.body.matchAll(/…/g)]).toHaveLength(1);
  });

  it('escapes the full-width solidus and full stop (compatibility forms of / and .)', () => {
    expect(renderValue('a\uFF0Fb\uFF0Etxt')).toBe('`a⟨U+FF0F⟩b⟨U+FF0E⟩txt`');
  });
});

describe('letters that look like path syntax: escaped only where their script does not fit the component', () => {
  it('ノ (U+30CE) in real Japanese names stays readable', () => {
    for (const name of ['ノート.txt', 'ノートパソコン.txt', '/srv/ノート/メモ.txt', '日本語ノート.md']) {
      expect(renderPath(name)).toBe(`\`${name}\``);
    }
  });

  it('ノ between Latin letters, or alone in a component, is escaped', () => {
    expect(renderPath('/srv/notes\u30CEthesis.txt')).toBe('`/srv/notes⟨U+30CE⟩thesis.txt`');
    expect(renderPath('/srv/\u30CE/x.txt')).toBe('`/srv/⟨U+30CE⟩/x.txt`');
    expect(renderPath('/srv/\u30CE.txt')).toBe('`/srv/⟨U+30CE⟩.txt`');
  });

  it('decides per path component: the same ノ is kept in ノート and escaped in notesノthesis', () => {
    expect(renderPath('/srv/ノート/notes\u30CEthesis.txt')).toBe('`/srv/ノート/notes⟨U+30CE⟩thesis.txt`');
  });

  it('丿 (U+4E3F) stays in a Han name and is escaped in a Latin one', () => {
    expect(renderPath('/srv/中丿文.txt')).toBe('`/srv/中丿文.txt`');
    expect(renderPath('/srv/a\u4E3Fb.txt')).toBe('`/srv/a⟨U+4E3F⟩b.txt`');
  });

  it('ः (U+0903 DEVANAGARI SIGN VISARGA) in a real Hindi name stays readable, and is escaped after a Latin letter', () => {
    for (const name of ['दुःख.txt', 'अतः.txt', 'प्रातः काल.txt']) {
      expect(renderPath(`/srv/${name}`)).toBe(`\`/srv/${name}\``);
      expect(valueWarnings(`/srv/${name}`, { segments: '/' })).toEqual([]);
    }
    expect(renderPath('/srv/notes\u0903thesis.txt')).toContain('notes⟨U+0903⟩thesis.txt');
  });

  it('٠ (U+0660 ARABIC-INDIC DIGIT ZERO) in a real Arabic name stays readable, and is escaped between Latin letters', () => {
    for (const name of ['تقرير ٢٠٢٤.txt', 'ملف٠١.txt', '٢٠٢٠.txt']) {
      expect(renderPath(`/srv/${name}`).startsWith(`\`/srv/${name}\``)).toBe(true);
      expect(valueWarnings(`/srv/${name}`, { segments: '/' })).not.toContain('mixes Latin and Arabic letters');
    }
    expect(renderPath('/srv/notes\u0660txt')).toBe('`/srv/notes⟨U+0660⟩txt` (warning: mixes Latin and Arabic letters)');
  });

  it('is injective: distinct values with path-syntax look-alikes render differently and decode back exactly', () => {
    const piece = fc.constantFrom(...members, 'a', 'ー', 'ト', 'क', 'ب', '中', '/', '.', ' ', '\u0301', '\\', '⟨', '⟩');
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 24 }).map((a) => a.join('')),
        (value) => {
          for (const options of [{}, { segments: '/' }]) {
            const parts = renderValueParts(value, { ...options, maxGraphemes: 100_000 });
            expect(decodeBody(parts.body)).toBe(value);
            for (const ch of members) if (!isLetterOfAScript(ch)) expect(raw(parts.body).includes(ch)).toBe(false);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('hard-4: a name wholly in another script that looks Latin (TR #39 §4 whole-script confusables)', () => {
  it('hard-4: warns for the all-Cyrillic сасһе.txt and not for cache.txt', () => {
    const cyrillic = '\u0441\u0430\u0441\u04BB\u0435.txt';
    expect(valueWarnings(cyrillic)).toEqual([WARNING.latinLookalike('Cyrillic')]);
    expect(renderPath(`/srv/${cyrillic}`)).toBe(
      `\`/srv/${cyrillic}\` (warning: written in Cyrillic letters that look like Latin ones)`,
    );
    expect(valueWarnings('cache.txt')).toEqual([]);
    expect(renderPath('/srv/cache.txt')).toBe('`/srv/cache.txt`');
  });

  it('checks each path component, so a Cyrillic directory that looks Latin warns under a Latin root', () => {
    expect(latinLookalikeScript('/srv/\u0441\u043E\u0440\u0435/x.txt', '/')).toBe('Cyrillic');
    expect(latinLookalikeScript('/srv/core/x.txt', '/')).toBeUndefined();
  });

  it('does not warn for real Cyrillic, Greek, Japanese or Hebrew names with letters that have no Latin look-alike', () => {
    for (const name of ['сайт.txt', 'отчёт.txt', 'Москва.txt', 'αρχείο.txt', 'ノート.txt', 'שלום.txt']) {
      expect(latinLookalikeScript(name), name).toBeUndefined();
      expect(
        valueWarnings(`/srv/${name}`, { segments: '/' }).some((w) => w.includes('look like Latin')),
        name,
      ).toBe(false);
    }
  });

  it('leaves a name that mixes Latin and Cyrillic to the mixed-script warning (one warning, not two)', () => {
    expect(valueWarnings('p\u0430ypal.txt')).toEqual(['mixes Latin and Cyrillic letters']);
  });

  it('names the script: an all-Greek name that looks Latin', () => {
    expect(valueWarnings('\u03BF\u03C1\u03BF.txt')).toEqual([WARNING.latinLookalike('Greek')]);
  });
});
