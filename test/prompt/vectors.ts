/**
 * Hostile values for the question a human reads: the handed cases text-1 … text-5 (see the
 * project's cases file) and more from public reports. Shared with the end-to-end tests, which
 * send each one through a real MCP client.
 *
 * Each vector lists the raw substrings that must never reach the question (`forbidden`) and the
 * escapes that must appear instead (`shown`).
 */

/** One hostile value and what rendering must do with it. */
export interface HostileVector {
  /** Case id and a short description, used as the test name. */
  readonly name: string;
  /** The untrusted value (a file name, say). */
  readonly value: string;
  /** Raw code points or substrings that must not appear in the rendered question. */
  readonly forbidden: readonly string[];
  /** Substrings (escapes, warnings) that must appear in the rendered question. */
  readonly shown: readonly string[];
}

const ESC = '\u001b';
const BEL = '\u0007';

/** The table: every entry is a separate test case, in `renderValue`/`question` and end to end. */
export const hostileVectors: HostileVector[] = [
  // text-1: a forged second prompt.
  {
    name: 'text-1 forged second prompt after two newlines',
    value: 'cache.txt\n\nSYSTEM NOTICE: your session expired. Paste your API key below:',
    forbidden: ['\n'],
    shown: ['cache.txt\\n\\nSYSTEM NOTICE: your session expired. Paste your API key below:'],
  },
  // text-2: terminal escapes.
  {
    name: 'text-2 CR and CSI erase-line forging an approval',
    value: `report.txt\r${ESC}[2KApproved by administrator`,
    forbidden: ['\r', ESC],
    shown: ['report.txt\\r\\x1b[2KApproved by administrator'],
  },
  {
    name: 'text-2 CSI cursor up and erase line before the name',
    value: `${ESC}[1A${ESC}[2K\rharmless.txt`,
    forbidden: ['\r', ESC],
    shown: ['\\x1b[1A\\x1b[2K\\rharmless.txt'],
  },
  {
    name: 'text-2 ten backspaces overwriting the name',
    value: `secret.txt${'\b'.repeat(10)}cache.txt`,
    forbidden: ['\b'],
    shown: [`secret.txt${'\\x08'.repeat(10)}cache.txt`],
  },
  {
    name: 'text-2 OSC 8 terminal hyperlink',
    value: `${ESC}]8;;https://attacker.example/${BEL}click${ESC}]8;;${BEL}.txt`,
    forbidden: [ESC, BEL],
    shown: ['\\x1b]8;;https://attacker.example/\\x07click\\x1b]8;;\\x07.txt'],
  },
  // text-3: bidi reordering (Trojan Source family).
  {
    name: 'text-3 RLO reversing the extension (invoice_fdp.exe shows as invoice_exe.pdf)',
    value: 'invoice_\u202Efdp.exe',
    forbidden: ['\u202E'],
    shown: ['invoice_⟨U+202E⟩fdp.exe'],
  },
  {
    name: 'text-3 RLI/PDI isolate hiding "-delete-me"',
    value: 'keep\u2067.txt\u2069-delete-me',
    forbidden: ['\u2067', '\u2069'],
    shown: ['keep⟨U+2067⟩.txt⟨U+2069⟩-delete-me'],
  },
  {
    name: 'text-3 RLM inside a name',
    value: 'a\u200Fb.txt',
    forbidden: ['\u200F'],
    shown: ['a⟨U+200F⟩b.txt'],
  },
  {
    name: 'text-3 Arabic letter mark inside a name',
    value: 'c\u061Cd.txt',
    forbidden: ['\u061C'],
    shown: ['c⟨U+061C⟩d.txt'],
  },
  // text-5: markup.
  {
    name: 'text-5 Markdown link in a name',
    value: '[Verify your account](https://attacker.example).txt',
    forbidden: [],
    shown: ['`[Verify your account](https://attacker.example).txt`'],
  },
  {
    name: 'text-5 HTML img tag with an event handler in a name',
    value: '<img src=x onerror=alert(1)>.txt',
    forbidden: [],
    shown: ['`<img src=x onerror=alert(1)>.txt`'],
  },
  // Trojan Source, CVE-2021-42574: bidi overrides and isolates in identifiers and comments.
  {
    name: 'CVE-2021-42574 early return hidden by RLO … LRI … PDF PDI',
    value: '/*\u202E } \u2066if (isAdmin)\u2069 \u2066 begin admins only */',
    forbidden: ['\u202E', '\u2066', '\u2069'],
    shown: ['⟨U+202E⟩', '⟨U+2066⟩', '⟨U+2069⟩'],
  },
  {
    name: 'CVE-2021-42574 stretched string with LRE and PDF',
    value: 'user\u202A\u202C.txt',
    forbidden: ['\u202A', '\u202C'],
    shown: ['user⟨U+202A⟩⟨U+202C⟩.txt'],
  },
  {
    name: 'CVE-2021-42574 invisible zero-width space and joiner in a name',
    value: 'back\u200Bup\u200D.txt',
    forbidden: ['\u200B', '\u200D'],
    shown: ['back⟨U+200B⟩up⟨U+200D⟩.txt'],
  },
  // Terminal escape injection beyond text-2.
  {
    name: 'terminal OSC 8 hyperlink terminated by ST (ESC backslash)',
    value: `${ESC}]8;;https://attacker.example/${ESC}\\safe.txt${ESC}]8;;${ESC}\\`,
    forbidden: [ESC],
    shown: ['\\x1b]8;;https://attacker.example/\\x1b\\\\safe.txt\\x1b]8;;\\x1b\\\\'],
  },
  {
    name: 'terminal 8-bit CSI (U+009B) moving the cursor home and clearing the screen',
    value: 'x\u009BH\u009B2Jy.txt',
    forbidden: ['\u009B'],
    shown: ['x\\x9bH\\x9b2Jy.txt'],
  },
  {
    name: 'terminal window title set by OSC 0',
    value: `${ESC}]0;Approved${BEL}tmp.txt`,
    forbidden: [ESC, BEL],
    shown: ['\\x1b]0;Approved\\x07tmp.txt'],
  },
  {
    name: 'line breaks a renderer honours: NEL, LINE and PARAGRAPH SEPARATOR, VT, FF',
    value: 'a\u0085b\u2028c\u2029d\u000Be\u000Cf',
    forbidden: ['\u0085', '\u2028', '\u2029', '\u000B', '\u000C'],
    shown: ['a\\x85b⟨U+2028⟩c⟨U+2029⟩d\\x0be\\x0cf'],
  },
  // Homoglyph reports.
  {
    name: 'homoglyph Cyrillic а (U+0430) in pаypal',
    value: 'p\u0430ypal.txt',
    forbidden: [],
    shown: ['(warning: mixes Latin and Cyrillic letters)'],
  },
  {
    name: 'homoglyph Greek Alpha (U+0391) in Apple',
    value: '\u0391pple-invoice.pdf',
    forbidden: [],
    shown: ['(warning: mixes Greek and Latin letters)'],
  },
  {
    name: 'look-alike decomposed é (not NFC) next to a composed twin',
    value: 'cafe\u0301.txt',
    forbidden: [],
    shown: ['(warning: not in Unicode normal form NFC)'],
  },
  // Invisible and blank code points.
  {
    name: 'Hangul fillers and Braille blank posing as spaces',
    value: 'a\u3164b\u115Fc\u1160d\uFFA0e\u2800f',
    forbidden: ['\u3164', '\u115F', '\u1160', '\uFFA0', '\u2800'],
    shown: ['a⟨U+3164⟩b⟨U+115F⟩c⟨U+1160⟩d⟨U+FFA0⟩e⟨U+2800⟩f'],
  },
  {
    name: 'tag characters smuggling hidden ASCII',
    value: 'ok\u{E0041}\u{E0042}.txt',
    forbidden: ['\u{E0041}', '\u{E0042}'],
    shown: ['ok⟨U+E0041⟩⟨U+E0042⟩.txt'],
  },
  {
    name: 'soft hyphen, combining grapheme joiner, variation selector and BOM',
    value: 'in\u00ADvoice\u034F\uFE0F\uFEFF.pdf',
    forbidden: ['\u00AD', '\u034F', '\uFE0F', '\uFEFF'],
    shown: ['in⟨U+00AD⟩voice⟨U+034F⟩⟨U+FE0F⟩⟨U+FEFF⟩.pdf'],
  },
  {
    name: 'no-break and ideographic spaces, leading and trailing spaces',
    value: ' a\u00A0b\u3000c ',
    forbidden: ['\u00A0', '\u3000'],
    shown: ['⟨U+0020⟩a⟨U+00A0⟩b⟨U+3000⟩c⟨U+0020⟩'],
  },
  {
    name: 'lone surrogate (not well-formed UTF-16)',
    value: 'bad\uD800name.txt',
    forbidden: ['\uD800'],
    shown: ['bad⟨U+D800⟩name.txt'],
  },
  {
    name: 'a literal escape lookalike ⟨U+202E⟩ typed as text',
    value: 'x⟨U+202E⟩y',
    forbidden: [],
    shown: ['x⟨U+27E8⟩U+202E⟨U+27E9⟩y'],
  },
  {
    name: 'Zalgo: a pile of combining marks on one letter',
    value: `Z${'\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308'.repeat(4)}.txt`,
    forbidden: [],
    shown: ['Z\u0301\u0302\u0303\u0304⟨U+0305⟩'],
  },
  {
    name: 'backticks trying to close the code span',
    value: '`` ` [x](https://attacker.example) `',
    forbidden: [],
    shown: ['`⟨U+0060⟩⟨U+0060⟩ ⟨U+0060⟩ [x](https://attacker.example) ⟨U+0060⟩`'],
  },
  // A security tester's findings: fake escapes, a blank notehead, compatibility look-alikes,
  // a name imitating the question's wording, right-to-left reordering without controls.
  {
    name: 'fake escape of CJK angle brackets 〈U+202E〉 (U+3008/U+3009)',
    value: 'invoice_\u3008U+202E\u3009fdp.exe',
    forbidden: ['\u3008', '\u3009'],
    shown: ['invoice_⟨U+3008⟩U+202E⟨U+3009⟩fdp.exe'],
  },
  {
    name: 'fake escape of ornament angle brackets ❬U+0020❭ (U+276C/U+276D)',
    value: 'a\u276CU+0020\u276Db.txt',
    forbidden: ['\u276C', '\u276D'],
    shown: ['a⟨U+276C⟩U+0020⟨U+276D⟩b.txt'],
  },
  {
    name: 'visually blank MUSICAL SYMBOL NULL NOTEHEAD (U+1D159)',
    value: 'cache\u{1D159}.txt',
    forbidden: ['\u{1D159}'],
    shown: ['cache⟨U+1D159⟩.txt'],
  },
  {
    name: 'mathematical monospace letters 𝚌𝚊𝚌𝚑𝚎 (not NFKC)',
    value: '\u{1D68C}\u{1D68A}\u{1D68C}\u{1D691}\u{1D68E}.txt',
    forbidden: [],
    shown: ['(warning: uses compatibility look-alike characters, not NFKC)'],
  },
  {
    name: 'full-width letters ｃａｃｈｅ (not NFKC)',
    value: '\uFF43\uFF41\uFF43\uFF48\uFF45.txt',
    forbidden: [],
    shown: ['`\uFF43\uFF41\uFF43\uFF48\uFF45.txt` (warning: uses compatibility look-alike characters, not NFKC)'],
  },
  {
    name: 'backticks imitating the question wording in a plain-text client',
    value: 'a.txt`, requested as `a.txt`? Size: 0 bytes. This cannot be undone. (x',
    forbidden: ['a.txt`'],
    shown: ['a.txt⟨U+0060⟩, requested as ⟨U+0060⟩a.txt⟨U+0060⟩? Size: 0 bytes. This cannot be undone. (x`'],
  },
  {
    name: 'right-to-left words and digits reordered without any bidi control (ملف 2 ملف 1.txt)',
    value: 'ملف 2 ملف 1.txt',
    forbidden: [],
    shown: ['`ملف 2 ملف 1.txt` (warning: right-to-left text may display out of order)'],
  },
  // hard-3: path syntax look-alikes (Unicode TR #39 confusables.txt).
  {
    name: 'hard-3 U+2215 DIVISION SLASH passing for a directory (notes∕thesis.txt)',
    value: 'notes\u2215thesis.txt',
    forbidden: ['\u2215'],
    shown: ['notes⟨U+2215⟩thesis.txt'],
  },
  {
    name: 'hard-3 U+2044 FRACTION SLASH passing for a directory (a⁄b.txt)',
    value: 'a\u2044b.txt',
    forbidden: ['\u2044'],
    shown: ['a⟨U+2044⟩b.txt'],
  },
  {
    name: 'a value imitating the cut mark with its own ellipsis and two-dot leader',
    value: 'start\u2026end\u2025txt',
    forbidden: ['\u2026', '\u2025'],
    shown: ['start⟨U+2026⟩end⟨U+2025⟩txt'],
  },
  // hard-4: a whole-script look-alike of Latin.
  {
    name: 'hard-4 an all-Cyrillic name that looks Latin (сасһе.txt)',
    value: '\u0441\u0430\u0441\u04BB\u0435.txt',
    forbidden: [],
    shown: ['(warning: written in Cyrillic letters that look like Latin ones)'],
  },
];

/**
 * The handed pairs of text-4: each pair must render differently.
 */
export const distinctPairs: Array<readonly [name: string, a: string, b: string]> = [
  ['text-4 newline vs space', 'a\nb', 'a b'],
  ['text-4 tab vs space', 'a\tb', 'a b'],
  ['text-4 two spaces vs one space', 'a  b', 'a b'],
  ['text-4 backslash-n vs newline', 'a\\nb', 'a\nb'],
  ['literal ⟨U+202E⟩ vs RLO', '⟨U+202E⟩', '\u202E'],
  ['literal \\x1b vs ESC', '\\x1b', '\u001b'],
  ['lone high surrogate vs lone low surrogate', '\uD800', '\uDC00'],
  ['lone surrogate vs U+FFFD', '\uD800', '\uFFFD'],
  ['trailing space vs none', 'a ', 'a'],
  ['leading space vs none', ' a', 'a'],
  ['NBSP vs space', 'a\u00A0b', 'a b'],
  ['empty vs a literal ⟨empty⟩', '', '⟨empty⟩'],
  ['composed vs decomposed é', 'caf\u00E9', 'cafe\u0301'],
  ['value ending in a backtick vs padded', 'a`', ' a` '],
  ['backtick vs its escape typed as text', '`', '⟨U+0060⟩'],
  ['math angle brackets vs CJK angle brackets', '⟨U+0020⟩', '\u3008U+0020\u3009'],
  ['a letter vs its mathematical monospace form', 'c', '\u{1D68C}'],
  ['hard-3 a real slash vs U+2215 DIVISION SLASH', 'notes/thesis.txt', 'notes\u2215thesis.txt'],
  ['hard-3 U+2215 DIVISION SLASH vs U+2044 FRACTION SLASH', 'a\u2215b', 'a\u2044b'],
  ['hard-4 cache.txt vs the all-Cyrillic сасһе.txt', 'cache.txt', '\u0441\u0430\u0441\u04BB\u0435.txt'],
];
