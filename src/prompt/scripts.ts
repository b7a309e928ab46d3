/**
 * Mixed-script detection for look-alike warnings (Unicode TR #39 §5.1 and §5.2).
 *
 * A value "mixes scripts" when its resolved script set is empty and it is not one of the
 * combinations TR #39 §5.2 accepts as Highly Restrictive (Latin with Han and Hiragana/Katakana,
 * with Han and Bopomofo, or with Han and Hangul):
 * - each code point has its Script_Extensions set (UAX #24), read with the `\p{scx=…}` property
 *   escapes of the running JavaScript engine; a code point whose set is Common or Inherited, or
 *   whose script is Unknown, is neutral (it goes with any script) and is skipped, and so is a
 *   format or default-ignorable code point (it is shown as an escape, so it cannot look alike);
 * - a trailing ASCII file extension (`.txt`, `.tar.gz`: a dot and 1–10 ASCII letters or digits,
 *   repeated) is ignored, since names in every script carry one: `שלום.txt` is not mixed,
 *   `pаypal.txt` (Cyrillic `а`) is;
 * - with a separator (`'/'` for paths), each piece between separators is checked on its own and
 *   the value mixes scripts when one piece does: `/home/me/שלום.txt` is not mixed (each directory
 *   name is in one script), `/home/me/pаypal.txt` is;
 * - each set is augmented as TR #39 §5.1 says: Han adds Hanb, Jpan and Kore; Hiragana and Katakana
 *   add Jpan; Hangul adds Kore; Bopomofo adds Hanb;
 * - the resolved set is the intersection of all augmented sets; it is empty for "pаypal" with a
 *   Cyrillic "а" (Latin ∩ Cyrillic), non-empty for "日本語のファイル" (Jpan).
 *
 * The result is a pure function of the value (module-level tables only memoise per code point
 * facts of the engine's Unicode data).
 *
 * A name written entirely in another script with letters that look Latin (the all-Cyrillic
 * `сасһе.txt` for `cache.txt`) is in one script and does not mix: {@link latinLookalikeScript}
 * finds it with the confusable prototypes of TR #39 §4 (confusables.txt of Unicode 13.0.0, see
 * confusablesData.ts). {@link componentScripts} and {@link sharesScript} serve the escaper's
 * path-syntax letters (escape.ts).
 *
 * @module
 */
import { BlockTable } from './blockTable.js';
import { LATIN_LOOKALIKE_RANGES } from './confusablesData.js';

/**
 * Every script value (UAX #24, long names) other than Common, Inherited and Unknown, as of
 * Unicode 17 (Node 20.20's ICU 78). Names the engine does not know are skipped.
 */
const SCRIPTS: readonly string[] = [
  'Adlam',
  'Ahom',
  'Anatolian_Hieroglyphs',
  'Arabic',
  'Armenian',
  'Avestan',
  'Balinese',
  'Bamum',
  'Bassa_Vah',
  'Batak',
  'Bengali',
  'Beria_Erfe',
  'Bhaiksuki',
  'Bopomofo',
  'Brahmi',
  'Braille',
  'Buginese',
  'Buhid',
  'Canadian_Aboriginal',
  'Carian',
  'Caucasian_Albanian',
  'Chakma',
  'Cham',
  'Cherokee',
  'Chorasmian',
  'Coptic',
  'Cuneiform',
  'Cypriot',
  'Cypro_Minoan',
  'Cyrillic',
  'Deseret',
  'Devanagari',
  'Dives_Akuru',
  'Dogra',
  'Duployan',
  'Egyptian_Hieroglyphs',
  'Elbasan',
  'Elymaic',
  'Ethiopic',
  'Garay',
  'Georgian',
  'Glagolitic',
  'Gothic',
  'Grantha',
  'Greek',
  'Gujarati',
  'Gunjala_Gondi',
  'Gurmukhi',
  'Gurung_Khema',
  'Han',
  'Hangul',
  'Hanifi_Rohingya',
  'Hanunoo',
  'Hatran',
  'Hebrew',
  'Hiragana',
  'Imperial_Aramaic',
  'Inscriptional_Pahlavi',
  'Inscriptional_Parthian',
  'Javanese',
  'Kaithi',
  'Kannada',
  'Katakana',
  'Kawi',
  'Kayah_Li',
  'Kharoshthi',
  'Khitan_Small_Script',
  'Khmer',
  'Khojki',
  'Khudawadi',
  'Kirat_Rai',
  'Lao',
  'Latin',
  'Lepcha',
  'Limbu',
  'Linear_A',
  'Linear_B',
  'Lisu',
  'Lycian',
  'Lydian',
  'Mahajani',
  'Makasar',
  'Malayalam',
  'Mandaic',
  'Manichaean',
  'Marchen',
  'Masaram_Gondi',
  'Medefaidrin',
  'Meetei_Mayek',
  'Mende_Kikakui',
  'Meroitic_Cursive',
  'Meroitic_Hieroglyphs',
  'Miao',
  'Modi',
  'Mongolian',
  'Mro',
  'Multani',
  'Myanmar',
  'Nabataean',
  'Nag_Mundari',
  'Nandinagari',
  'New_Tai_Lue',
  'Newa',
  'Nko',
  'Nushu',
  'Nyiakeng_Puachue_Hmong',
  'Ogham',
  'Ol_Chiki',
  'Ol_Onal',
  'Old_Hungarian',
  'Old_Italic',
  'Old_North_Arabian',
  'Old_Permic',
  'Old_Persian',
  'Old_Sogdian',
  'Old_South_Arabian',
  'Old_Turkic',
  'Old_Uyghur',
  'Oriya',
  'Osage',
  'Osmanya',
  'Pahawh_Hmong',
  'Palmyrene',
  'Pau_Cin_Hau',
  'Phags_Pa',
  'Phoenician',
  'Psalter_Pahlavi',
  'Rejang',
  'Runic',
  'Samaritan',
  'Saurashtra',
  'Sharada',
  'Shavian',
  'Siddham',
  'Sidetic',
  'SignWriting',
  'Sinhala',
  'Sogdian',
  'Sora_Sompeng',
  'Soyombo',
  'Sundanese',
  'Sunuwar',
  'Syloti_Nagri',
  'Syriac',
  'Tagalog',
  'Tagbanwa',
  'Tai_Le',
  'Tai_Tham',
  'Tai_Viet',
  'Tai_Yo',
  'Takri',
  'Tamil',
  'Tangsa',
  'Tangut',
  'Telugu',
  'Thaana',
  'Thai',
  'Tibetan',
  'Tifinagh',
  'Tirhuta',
  'Todhri',
  'Tolong_Siki',
  'Toto',
  'Tulu_Tigalari',
  'Ugaritic',
  'Vai',
  'Vithkuqi',
  'Wancho',
  'Warang_Citi',
  'Yezidi',
  'Yi',
  'Zanabazar_Square',
];

/** Node of a binary search tree over script classes: one regex test per level. */
type Tree = { readonly name: string } | { readonly left: RegExp; readonly l: Tree; readonly r: Tree };

interface Tables {
  /** The supported script names; a script's id is its index + FIRST_SCRIPT. */
  readonly names: readonly string[];
  /** Finds the Script value of a code point whose Script is not Common/Inherited/Unknown. */
  readonly tree: Tree;
  /** Code points whose Script_Extensions differ from {Script}: their set is computed in full. */
  readonly multi: RegExp;
  /** Code point → NEUTRAL, MULTI, or FIRST_SCRIPT + index of its only script. */
  readonly ids: BlockTable;
}

/** Ids in the table. */
const NEUTRAL = 0;
const MULTI = 1;
const FIRST_SCRIPT = 2;
/** Id used in the scan for an ASCII letter (Latin) without a table lookup. */
const LATIN_ASCII = 255;

/**
 * Neutral code points: Script_Extensions {Common} or {Inherited}, Script Unknown (unassigned,
 * surrogates), and format or default-ignorable code points (always shown as escapes).
 */
const NEUTRAL_CLASS = /^[\p{scx=Zyyy}\p{scx=Zinh}\p{sc=Zzzz}\p{Cf}\p{Default_Ignorable_Code_Point}]$/u;
const NEUTRAL_SCRIPT = /^[\p{sc=Zyyy}\p{sc=Zinh}\p{sc=Zzzz}]$/u;

let tables: Tables | undefined;
const scxRegex = new Map<string, RegExp>();
const multiCache = new Map<number, { readonly scx: readonly string[]; readonly name: string }>();

function supported(name: string): boolean {
  try {
    new RegExp(`\\p{sc=${name}}`, 'u');
    return true;
  } catch {
    return false;
  }
}

function buildTree(names: readonly string[]): Tree {
  if (names.length === 1) return { name: names[0] ?? 'Unknown' };
  const mid = names.length >> 1;
  const left = names.slice(0, mid);
  return {
    left: new RegExp(`[${left.map((n) => `\\p{sc=${n}}`).join('')}]`, 'u'),
    l: buildTree(left),
    r: buildTree(names.slice(mid)),
  };
}

/** Script of a code point known to have a specific Script (not Common/Inherited/Unknown). */
function scriptOf(t: Tables, ch: string): string {
  let node = t.tree;
  while (!('name' in node)) node = node.left.test(ch) ? node.l : node.r;
  return node.name;
}

/**
 * Built on first use (about 10 ms, paid once a value has a non-ASCII character); each 256-code
 * point block of the id table costs about 0.1 ms the first time it is met.
 */
function getTables(): Tables {
  if (tables === undefined) {
    const names = SCRIPTS.filter(supported);
    const index = new Map(names.map((n, i) => [n, i]));
    const multi = new RegExp(`[${names.map((n) => `[\\p{scx=${n}}--\\p{sc=${n}}]`).join('')}]`, 'v');
    const t: Tables = {
      names,
      tree: buildTree(names),
      multi,
      ids: new BlockTable((cp) => {
        if (cp >= 0xd800 && cp <= 0xdfff) return NEUTRAL;
        const ch = String.fromCodePoint(cp);
        if (NEUTRAL_CLASS.test(ch)) return NEUTRAL;
        if (multi.test(ch)) return MULTI;
        return FIRST_SCRIPT + (index.get(scriptOf(t, ch)) ?? 0);
      }),
    };
    tables = t;
  }
  return tables;
}

/** Script_Extensions (in SCRIPTS order) and display script of a code point of the MULTI kind. */
function extensionsOf(t: Tables, cp: number): { readonly scx: readonly string[]; readonly name: string } {
  let found = multiCache.get(cp);
  if (found === undefined) {
    const ch = String.fromCodePoint(cp);
    const scx = t.names.filter((n) => {
      let re = scxRegex.get(n);
      if (re === undefined) {
        re = new RegExp(`\\p{scx=${n}}`, 'u');
        scxRegex.set(n, re);
      }
      return re.test(ch);
    });
    found = { scx, name: NEUTRAL_SCRIPT.test(ch) ? (scx[0] ?? 'Unknown') : scriptOf(t, ch) };
    multiCache.set(cp, found);
  }
  return found;
}

const HAS_NON_ASCII = /[^\x00-\x7F]/;
const EXTENSION_PART = /^\.[A-Za-z0-9]{1,10}$/;

/**
 * End of the piece `value[start, end)` without its trailing ASCII file extensions (`.txt`,
 * `.tar.gz`). Looks at most 11 code units back per extension, so it is linear in what it strips.
 */
function stemEnd(value: string, start: number, end: number): number {
  for (;;) {
    let dot = -1;
    for (let k = end - 1; k >= start && k >= end - 11; k--) {
      if (value.charCodeAt(k) === 0x2e) {
        dot = k;
        break;
      }
    }
    if (dot < 0 || !EXTENSION_PART.test(value.slice(dot, end))) return end;
    end = dot;
  }
}

/** TR #39 §5.1 augmentation. */
function augment(scx: readonly string[]): Set<string> {
  const out = new Set(scx);
  for (const s of scx) {
    if (s === 'Han') ['Hanb', 'Jpan', 'Kore'].forEach((x) => out.add(x));
    else if (s === 'Hiragana' || s === 'Katakana') out.add('Jpan');
    else if (s === 'Hangul') out.add('Kore');
    else if (s === 'Bopomofo') out.add('Hanb');
  }
  return out;
}

/** Intersection of the sets, skipping sets that contain `without`; undefined means "all". */
function resolve(sets: Iterable<ReadonlySet<string>>, without?: string): Set<string> | undefined {
  let acc: Set<string> | undefined;
  for (const s of sets) {
    if (without !== undefined && s.has(without)) continue;
    if (acc === undefined) acc = new Set(s);
    else for (const x of acc) if (!s.has(x)) acc.delete(x);
  }
  return acc;
}

/** What {@link scriptMix} found. */
export interface ScriptMix {
  /** True when the value mixes scripts in the sense of TR #39 §5.2 (not Highly Restrictive). */
  readonly mixed: boolean;
  /**
   * Script names (UAX #24 long names, `_` as space): the scripts of single-script code points in
   * order of first appearance, then, for a code point with several Script_Extensions none of
   * which is named yet, its Script (or its first extension when its Script is Common/Inherited).
   */
  readonly scripts: readonly string[];
}

/**
 * Decides whether a value mixes scripts (Unicode TR #39 §5.1 resolved script set, §5.2 Highly
 * Restrictive exceptions). Linear in the value's length.
 *
 * @param value - any string; lone surrogates are neutral.
 * @param separator - when given (a non-empty string, e.g. `'/'`), each piece between separators
 *   is checked on its own: the value mixes scripts when some piece does, and `scripts` then names
 *   the scripts of the pieces that mix (otherwise of all pieces), in order of first appearance.
 * @returns whether it mixes and which scripts it uses.
 * @example
 * ```ts
 * import { scriptMix } from './scripts.js';
 *
 * scriptMix('p\u0430ypal').mixed           // true: Latin and Cyrillic
 * scriptMix('שלום.txt').mixed               // false: the extension is ignored
 * scriptMix('/tmp/r/שלום.txt', '/').mixed   // false: each path component is in one script
 * ```
 */
export function scriptMix(value: string, separator?: string): ScriptMix {
  if (!HAS_NON_ASCII.test(value)) return { mixed: false, scripts: [] };
  if (separator === undefined || separator === '') return mixOf(value, 0, value.length);
  const mixedNames = new Set<string>();
  const allNames = new Set<string>();
  let mixed = false;
  let start = 0;
  for (;;) {
    const at = value.indexOf(separator, start);
    const end = at < 0 ? value.length : at;
    const piece = mixOf(value, start, end);
    for (const name of piece.scripts) {
      allNames.add(name);
      if (piece.mixed) mixedNames.add(name);
    }
    if (piece.mixed) mixed = true;
    if (at < 0) break;
    start = at + separator.length;
  }
  return { mixed, scripts: [...(mixed ? mixedNames : allNames)] };
}

/** Scratch space of {@link mixOf}, reset after each use: which ids and MULTI code points it met. */
const seenIds = new Uint8Array(256);
const seenMulti = new Set<number>();

/** {@link scriptMix} of the piece `value[start, stop)`. */
function mixOf(value: string, start: number, stop: number): ScriptMix {
  let ascii = true;
  for (let i = start; i < stop && ascii; i++) if (value.charCodeAt(i) >= 0x80) ascii = false;
  if (ascii) return { mixed: false, scripts: [] };
  const t = getTables();
  const end = stemEnd(value, start, stop);
  const ids: number[] = [];
  const multis: Array<{ readonly scx: readonly string[]; readonly name: string }> = [];
  try {
    for (let i = start; i < end; i++) {
      let cp = value.charCodeAt(i);
      let id: number;
      if (cp < 0x80) {
        id = (cp | 0x20) >= 0x61 && (cp | 0x20) <= 0x7a ? LATIN_ASCII : NEUTRAL;
      } else {
        if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < end) {
          const lo = value.charCodeAt(i + 1);
          if (lo >= 0xdc00 && lo <= 0xdfff) {
            cp = ((cp - 0xd800) << 10) + (lo - 0xdc00) + 0x10000;
            i += 1;
          }
        }
        id = t.ids.get(cp);
      }
      if (id === NEUTRAL) continue;
      if (id === MULTI) {
        if (seenMulti.has(cp)) continue;
        seenMulti.add(cp);
        multis.push(extensionsOf(t, cp));
      } else if (seenIds[id] === 0) {
        seenIds[id] = 1;
        ids.push(id);
      }
    }
  } finally {
    for (const id of ids) seenIds[id] = 0;
    seenMulti.clear();
  }
  const names: string[] = [];
  for (const id of ids) {
    const name = id === LATIN_ASCII ? 'Latin' : (t.names[id - FIRST_SCRIPT] ?? 'Unknown');
    if (!names.includes(name)) names.push(name);
  }
  // One script and nothing else: not mixed (the common case, without building sets).
  if (multis.length === 0 && names.length <= 1)
    return { mixed: false, scripts: names.map((n) => n.replaceAll('_', ' ')) };
  // A code point with several scripts is named only when it shares none with those named.
  const named = names.slice();
  for (const { scx, name } of multis) {
    if (!scx.some((x) => named.includes(x))) named.push(name);
  }
  return { mixed: decide(names, multis), scripts: named.map((n) => n.replaceAll('_', ' ')) };
}

/** Memo of {@link decide} by the sets it was given, bounded; a pure cache. */
const decisions = new Map<string, boolean>();

/** Whether single-script code points of `names` and the `multis` mix scripts (TR #39 §5.1, §5.2). */
function decide(names: readonly string[], multis: ReadonlyArray<{ readonly scx: readonly string[] }>): boolean {
  const keys = [...names, ...multis.map((m) => m.scx.join(' '))].sort();
  const key = keys.join('|');
  let mixed = decisions.get(key);
  if (mixed !== undefined) return mixed;
  const sets = new Map<string, Set<string>>();
  const record = (scx: readonly string[]): void => {
    const k = scx.join(' ');
    if (!sets.has(k)) sets.set(k, augment(scx));
  };
  for (const name of names) record([name]);
  for (const m of multis) record(m.scx);
  const all = resolve(sets.values());
  mixed = all !== undefined && all.size === 0;
  if (mixed) {
    // TR #39 §5.2 Highly Restrictive: Latin + {Han, Hiragana, Katakana} | {Han, Bopomofo} | {Han, Hangul}.
    const noLatin = resolve(sets.values(), 'Latin');
    if (noLatin === undefined || ['Jpan', 'Hanb', 'Kore'].some((x) => noLatin.has(x))) mixed = false;
  }
  if (decisions.size >= 4096) decisions.clear();
  decisions.set(key, mixed);
  return mixed;
}

/** Memo of the augmented scripts (TR #39 §5.1) per single-script id and per MULTI code point. */
const augmentedById: Array<readonly string[] | undefined> = [];
const augmentedCache = new Map<number, readonly string[]>();

/** The augmented scripts of a code point whose id (in the table, or LATIN_ASCII) is not NEUTRAL. */
function augmentedOf(t: Tables, id: number, cp: number): readonly string[] {
  if (id === MULTI) {
    let found = augmentedCache.get(cp);
    if (found === undefined) {
      found = [...augment(extensionsOf(t, cp).scx)];
      if (augmentedCache.size >= 4096) augmentedCache.clear();
      augmentedCache.set(cp, found);
    }
    return found;
  }
  let found = augmentedById[id];
  if (found === undefined) {
    found = [...augment([id === LATIN_ASCII ? 'Latin' : (t.names[id - FIRST_SCRIPT] ?? 'Unknown')])];
    augmentedById[id] = found;
  }
  return found;
}

/** The table id of a code point, with LATIN_ASCII for ASCII letters. */
function idOf(t: Tables, cp: number): number {
  if (cp < 0x80) return (cp | 0x20) >= 0x61 && (cp | 0x20) <= 0x7a ? LATIN_ASCII : NEUTRAL;
  return t.ids.get(cp);
}

/**
 * Fills `out` with the union of the augmented script sets (TR #39 §5.1: Script_Extensions, Han
 * adding Hanb, Jpan and Kore, and so on) of the code points of `value[start, end)`, skipping
 * neutral code points (see {@link scriptMix}) and those for which `skip` is true. `out` is
 * cleared first. Linear in `end - start`, with no allocation per call beyond `out`'s growth.
 *
 * Used by the escaper to decide whether a letter that looks like path syntax (U+30CE ノ) belongs
 * to the script of the rest of its path component (`ノート.txt`) or not (`notesノthesis.txt`).
 *
 * @param value - any string (lone surrogates are neutral).
 * @param start - first code unit of the piece.
 * @param end - end of the piece (exclusive).
 * @param skip - code points not counted.
 * @param out - the set to fill.
 */
export function componentScripts(
  value: string,
  start: number,
  end: number,
  skip: (cp: number) => boolean,
  out: Set<string>,
): void {
  out.clear();
  if (start >= end) return;
  const t = getTables();
  const ids: number[] = [];
  try {
    for (let i = start; i < end; i++) {
      let cp = value.charCodeAt(i);
      if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < end) {
        const lo = value.charCodeAt(i + 1);
        if (lo >= 0xdc00 && lo <= 0xdfff) {
          cp = ((cp - 0xd800) << 10) + (lo - 0xdc00) + 0x10000;
          i += 1;
        }
      }
      const id = idOf(t, cp);
      if (id === NEUTRAL || skip(cp)) continue;
      if (id === MULTI) {
        if (seenMulti.has(cp)) continue;
        seenMulti.add(cp);
      } else {
        if (seenIds[id] === 1) continue;
        seenIds[id] = 1;
        ids.push(id);
      }
      for (const x of augmentedOf(t, id, cp)) out.add(x);
    }
  } finally {
    for (const id of ids) seenIds[id] = 0;
    seenMulti.clear();
  }
}

/**
 * Whether the code point has a script of `scripts` (compared after TR #39 §5.1 augmentation, so
 * Katakana ノ shares Jpan with Han). A neutral code point shares none.
 *
 * @param cp - a code point.
 * @param scripts - e.g. from {@link componentScripts}.
 */
export function sharesScript(cp: number, scripts: ReadonlySet<string>): boolean {
  if (scripts.size === 0) return false;
  const t = getTables();
  const id = idOf(t, cp);
  if (id === NEUTRAL) return false;
  return augmentedOf(t, id, cp).some((x) => scripts.has(x));
}

/** Code points whose confusable prototype is ASCII letters and digits (see confusablesData.ts). */
let latinLookalikes: Set<number> | undefined;
function latinLookalike(cp: number): boolean {
  if (latinLookalikes === undefined) {
    const set = new Set<number>();
    let at = 0;
    for (const range of LATIN_LOOKALIKE_RANGES.split(';')) {
      const [delta = '0', length = '0'] = range.split(',');
      const start = at + parseInt(delta, 36);
      at = start + parseInt(length, 36);
      for (let cp = start; cp < at; cp++) set.add(cp);
    }
    latinLookalikes = set;
  }
  return latinLookalikes.has(cp);
}

/**
 * Finds a piece written wholly in another script that can pass for Latin (Unicode TR #39 §4,
 * whole-script confusables, with Latin as the other script): the all-Cyrillic `сасһе.txt`, whose
 * skeleton is that of `cache.txt`.
 *
 * A piece (between separators when `separator` is given, without its trailing ASCII file
 * extension, as in {@link scriptMix}) qualifies when it has no Latin letter, has at least one
 * code point that is not neutral, and every code point that is not neutral has a confusable
 * prototype (confusables.txt of Unicode 13.0.0) made only of ASCII letters and digits. Only Latin
 * is checked as the other script: a Latin name that passes for Cyrillic, or a Greek one that
 * passes for Cyrillic, is not flagged. Linear in the value's length.
 *
 * @param value - any string.
 * @param separator - as in {@link scriptMix}.
 * @returns the script (UAX #24 long name, `_` as space) of the first such piece, or undefined.
 * @example
 * ```ts
 * import { latinLookalikeScript } from './scripts.js';
 *
 * latinLookalikeScript('\u0441\u0430\u0441\u04BB\u0435.txt') // 'Cyrillic'
 * latinLookalikeScript('cache.txt')                          // undefined
 * latinLookalikeScript('сайт.txt')                           // undefined: й, т have no Latin look-alike
 * ```
 */
export function latinLookalikeScript(value: string, separator?: string): string | undefined {
  if (!HAS_NON_ASCII.test(value)) return undefined;
  const sep = separator === undefined || separator === '' ? undefined : separator;
  let start = 0;
  for (;;) {
    const at = sep === undefined ? -1 : value.indexOf(sep, start);
    const end = at < 0 ? value.length : at;
    const found = lookalikePiece(value, start, stemEnd(value, start, end));
    if (found !== undefined) return found.replaceAll('_', ' ');
    if (at < 0 || sep === undefined) return undefined;
    start = at + sep.length;
  }
}

/** {@link latinLookalikeScript} of one piece `value[start, end)`. */
function lookalikePiece(value: string, start: number, end: number): string | undefined {
  let script: string | undefined;
  let t: Tables | undefined;
  for (let i = start; i < end; i++) {
    let cp = value.charCodeAt(i);
    if (cp < 0x80) {
      if ((cp | 0x20) >= 0x61 && (cp | 0x20) <= 0x7a) return undefined;
      continue;
    }
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < end) {
      const lo = value.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        cp = ((cp - 0xd800) << 10) + (lo - 0xdc00) + 0x10000;
        i += 1;
      }
    }
    t ??= getTables();
    const id = t.ids.get(cp);
    if (id === NEUTRAL) continue;
    if (!latinLookalike(cp)) return undefined;
    const scx = id === MULTI ? extensionsOf(t, cp).scx : [t.names[id - FIRST_SCRIPT] ?? 'Unknown'];
    if (scx.includes('Latin')) return undefined;
    script ??= id === MULTI ? extensionsOf(t, cp).name : scx[0];
  }
  return script;
}
