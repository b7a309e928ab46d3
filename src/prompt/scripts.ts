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
 * - each set is augmented as TR #39 §5.1 says: Han adds Hanb, Jpan and Kore; Hiragana and Katakana
 *   add Jpan; Hangul adds Kore; Bopomofo adds Hanb;
 * - the resolved set is the intersection of all augmented sets; it is empty for "pаypal" with a
 *   Cyrillic "а" (Latin ∩ Cyrillic), non-empty for "日本語のファイル" (Jpan).
 *
 * The result is a pure function of the value (module-level caches only memoise per code point
 * facts of the engine's Unicode data).
 *
 * @module
 */

/**
 * Every script value (UAX #24, long names) other than Common, Inherited and Unknown, as of
 * Unicode 17 (Node 20.20's ICU 78). Names the engine does not know are skipped.
 */
const SCRIPTS: readonly string[] = [
  'Adlam', 'Ahom', 'Anatolian_Hieroglyphs', 'Arabic', 'Armenian', 'Avestan', 'Balinese', 'Bamum',
  'Bassa_Vah', 'Batak', 'Bengali', 'Beria_Erfe', 'Bhaiksuki', 'Bopomofo', 'Brahmi', 'Braille',
  'Buginese', 'Buhid', 'Canadian_Aboriginal', 'Carian', 'Caucasian_Albanian', 'Chakma', 'Cham',
  'Cherokee', 'Chorasmian', 'Coptic', 'Cuneiform', 'Cypriot', 'Cypro_Minoan', 'Cyrillic',
  'Deseret', 'Devanagari', 'Dives_Akuru', 'Dogra', 'Duployan', 'Egyptian_Hieroglyphs', 'Elbasan',
  'Elymaic', 'Ethiopic', 'Garay', 'Georgian', 'Glagolitic', 'Gothic', 'Grantha', 'Greek',
  'Gujarati', 'Gunjala_Gondi', 'Gurmukhi', 'Gurung_Khema', 'Han', 'Hangul', 'Hanifi_Rohingya',
  'Hanunoo', 'Hatran', 'Hebrew', 'Hiragana', 'Imperial_Aramaic', 'Inscriptional_Pahlavi',
  'Inscriptional_Parthian', 'Javanese', 'Kaithi', 'Kannada', 'Katakana', 'Kawi', 'Kayah_Li',
  'Kharoshthi', 'Khitan_Small_Script', 'Khmer', 'Khojki', 'Khudawadi', 'Kirat_Rai', 'Lao', 'Latin',
  'Lepcha', 'Limbu', 'Linear_A', 'Linear_B', 'Lisu', 'Lycian', 'Lydian', 'Mahajani', 'Makasar',
  'Malayalam', 'Mandaic', 'Manichaean', 'Marchen', 'Masaram_Gondi', 'Medefaidrin', 'Meetei_Mayek',
  'Mende_Kikakui', 'Meroitic_Cursive', 'Meroitic_Hieroglyphs', 'Miao', 'Modi', 'Mongolian', 'Mro',
  'Multani', 'Myanmar', 'Nabataean', 'Nag_Mundari', 'Nandinagari', 'New_Tai_Lue', 'Newa', 'Nko',
  'Nushu', 'Nyiakeng_Puachue_Hmong', 'Ogham', 'Ol_Chiki', 'Ol_Onal', 'Old_Hungarian', 'Old_Italic',
  'Old_North_Arabian', 'Old_Permic', 'Old_Persian', 'Old_Sogdian', 'Old_South_Arabian',
  'Old_Turkic', 'Old_Uyghur', 'Oriya', 'Osage', 'Osmanya', 'Pahawh_Hmong', 'Palmyrene',
  'Pau_Cin_Hau', 'Phags_Pa', 'Phoenician', 'Psalter_Pahlavi', 'Rejang', 'Runic', 'Samaritan',
  'Saurashtra', 'Sharada', 'Shavian', 'Siddham', 'Sidetic', 'SignWriting', 'Sinhala', 'Sogdian',
  'Sora_Sompeng', 'Soyombo', 'Sundanese', 'Sunuwar', 'Syloti_Nagri', 'Syriac', 'Tagalog',
  'Tagbanwa', 'Tai_Le', 'Tai_Tham', 'Tai_Viet', 'Tai_Yo', 'Takri', 'Tamil', 'Tangsa', 'Tangut',
  'Telugu', 'Thaana', 'Thai', 'Tibetan', 'Tifinagh', 'Tirhuta', 'Todhri', 'Tolong_Siki', 'Toto',
  'Tulu_Tigalari', 'Ugaritic', 'Vai', 'Vithkuqi', 'Wancho', 'Warang_Citi', 'Yezidi', 'Yi',
  'Zanabazar_Square',
];

/** Node of a binary search tree over script classes: one regex test per level. */
type Tree = { readonly name: string } | { readonly left: RegExp; readonly l: Tree; readonly r: Tree };

interface Tables {
  /** Finds the Script value of a code point whose Script is not Common/Inherited/Unknown. */
  readonly tree: Tree;
  /** Code points whose Script_Extensions differ from {Script}: their set is computed in full. */
  readonly multi: RegExp;
  /** The supported script names. */
  readonly names: readonly string[];
}

let tables: Tables | undefined;
const scRegex = new Map<string, RegExp>();
const scxRegex = new Map<string, RegExp>();
const skipRegex = new Map<string, RegExp>();
const multiCache = new Map<number, readonly string[]>();

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

/** Built on first use: about 10 ms, paid only once a value has a non-ASCII letter. */
function getTables(): Tables {
  if (tables === undefined) {
    const names = SCRIPTS.filter(supported);
    const multi = new RegExp(
      `[${names.map((n) => `[\\p{scx=${n}}--\\p{sc=${n}}]`).join('')}]`,
      'v',
    );
    tables = { tree: buildTree(names), multi, names };
  }
  return tables;
}

function cached(map: Map<string, RegExp>, name: string, make: (n: string) => RegExp): RegExp {
  let re = map.get(name);
  if (re === undefined) {
    re = make(name);
    map.set(name, re);
  }
  return re;
}

/** Script of a code point known to have a specific Script (not Common/Inherited/Unknown). */
function scriptOf(ch: string): string {
  let node = getTables().tree;
  while (!('name' in node)) node = node.left.test(ch) ? node.l : node.r;
  return node.name;
}

/** Full Script_Extensions of a code point in the `multi` class, in SCRIPTS order. */
function extensionsOf(ch: string, cp: number): readonly string[] {
  let scx = multiCache.get(cp);
  if (scx === undefined) {
    scx = getTables().names.filter((n) =>
      cached(scxRegex, n, (x) => new RegExp(`\\p{scx=${x}}`, 'u')).test(ch),
    );
    multiCache.set(cp, scx);
  }
  return scx;
}

const HAS_NON_ASCII = /[^\x00-\x7F]/;
const HAS_ASCII_LETTER = /[A-Za-z]/;
/** Candidates: non-ASCII code points that are not neutral. */
const CANDIDATE =
  /[^\p{scx=Zyyy}\p{scx=Zinh}\p{sc=Zzzz}\p{Cf}\p{Default_Ignorable_Code_Point}\x00-\x7F]/gu;
const EXTENSION_PART = /^\.[A-Za-z0-9]{1,10}$/;

/** The value without its trailing ASCII file extensions (`.txt`, `.tar.gz`); linear time. */
function stripExtensions(value: string): string {
  let end = value.length;
  for (;;) {
    const dot = value.lastIndexOf('.', end - 1);
    const part = dot < 0 || end - dot > 11 ? '' : value.slice(dot, end);
    if (!EXTENSION_PART.test(part)) return value.slice(0, end);
    end = dot;
  }
}
const NEUTRAL_SCRIPT = /^[\p{sc=Zyyy}\p{sc=Zinh}\p{sc=Zzzz}]$/u;

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
   * Script names (UAX #24 long names, `_` as space): Latin first if the value has ASCII letters,
   * then in order of first appearance; at most 5.
   */
  readonly scripts: readonly string[];
  /** True when scanning stopped early because five different scripts were already found. */
  readonly more: boolean;
}

/** At this many distinct single scripts the value is mixed whatever follows (TR #39 §5.1). */
const ENOUGH = 5;

/**
 * Decides whether a value mixes scripts (Unicode TR #39 §5.1 resolved script set, §5.2 Highly
 * Restrictive exceptions).
 *
 * @param value - any string; lone surrogates are neutral.
 * @returns whether it mixes and which scripts it uses.
 * @example
 * scriptMix('p\u0430ypal').mixed // true: Latin and Cyrillic
 * scriptMix('שלום.txt').mixed     // false: the extension is ignored
 */
export function scriptMix(value: string): ScriptMix {
  if (!HAS_NON_ASCII.test(value)) return { mixed: false, scripts: [], more: false };
  const stem = stripExtensions(value);
  const sets = new Map<string, Set<string>>();
  const names: string[] = [];
  const singles: string[] = [];
  let more = false;
  const record = (scx: readonly string[], name: string): void => {
    const key = scx.join(' ');
    if (!sets.has(key)) sets.set(key, augment(scx));
    if (!names.includes(name)) names.push(name);
  };
  if (HAS_ASCII_LETTER.test(stem)) {
    record(['Latin'], 'Latin');
    singles.push('Latin');
  }
  const { multi } = getTables();
  const candidate = new RegExp(CANDIDATE.source, CANDIDATE.flags);
  for (let m = candidate.exec(stem); m !== null; m = candidate.exec(stem)) {
    const ch = m[0];
    const cp = ch.codePointAt(0) ?? 0;
    if (multi.test(ch)) {
      const scx = extensionsOf(ch, cp);
      record(scx, NEUTRAL_SCRIPT.test(ch) ? (scx[0] ?? 'Unknown') : scriptOf(ch));
      continue;
    }
    const sc =
      singles.find((n) => cached(scRegex, n, (x) => new RegExp(`\\p{sc=${x}}`, 'u')).test(ch)) ??
      scriptOf(ch);
    if (!singles.includes(sc)) {
      singles.push(sc);
      if (singles.length >= ENOUGH) {
        record([sc], sc);
        more = true;
        break;
      }
    }
    record([sc], sc);
    // Code points whose extensions contain sc cannot shrink a set already inside augment({sc}).
    const skip = cached(
      skipRegex,
      sc,
      (x) => new RegExp(`[\\p{scx=${x}}\\p{scx=Zyyy}\\p{scx=Zinh}\\p{sc=Zzzz}\\x00-\\x7F]+`, 'uy'),
    );
    skip.lastIndex = candidate.lastIndex;
    if (skip.test(stem)) candidate.lastIndex = skip.lastIndex;
  }
  const all = resolve(sets.values());
  let mixed = all !== undefined && all.size === 0;
  if (mixed && !more) {
    // TR #39 §5.2 Highly Restrictive: Latin + {Han, Hiragana, Katakana} | {Han, Bopomofo} | {Han, Hangul}.
    const noLatin = resolve(sets.values(), 'Latin');
    if (noLatin === undefined || ['Jpan', 'Hanb', 'Kore'].some((x) => noLatin.has(x))) mixed = false;
  }
  return { mixed, scripts: names.map((n) => n.replaceAll('_', ' ')), more };
}
