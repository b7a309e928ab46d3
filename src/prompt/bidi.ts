/**
 * Does right-to-left text in the shown value display out of its stored order? (Unicode TR #9,
 * the Unicode Bidirectional Algorithm, revision for Unicode 17.)
 *
 * Every bidi control is escaped (see escape.ts), yet right-to-left letters alone reorder text:
 * `/tmp/r/א/ב/ג.txt` displays as `/tmp/r/ג/ב/א.txt`, and `ملف 2 ملف 1.txt` as `1 ملف 2 ملف.txt`.
 * A reader who takes the display for the stored order sees another name. Inserting isolates is
 * not an option (the message carries no raw bidi control), so the value gets a warning instead.
 *
 * The rule. The shown text (the code span's content, escapes and `…` included) is resolved as
 * TR #9 resolves one isolating run sequence of a left-to-right paragraph (embedding level 0)
 * whose text on both sides is left-to-right (sos = eos = L): rules W1–W7, N0 (bracket pairs,
 * BD16), N1, N2 and I1. The shown text holds no explicit formatting character and no paragraph
 * or segment separator (they are all escaped), so rules P2–P3 and X1–X10 have nothing to do, and
 * L1 never applies inside a line. Then rule L2 reverses every maximal run of characters at level
 * 1 or more. The value is flagged when such a run is anything other than:
 * - one right-to-left word: only characters of Bidi_Class R or AL and the nonspacing marks on
 *   them (W1), all at level 1, which every reader expects to run right to left (`שלום.txt`,
 *   `مرحبا.txt`); or
 * - one number: only characters at level 2 (digits and the separators W4 joins to them), which
 *   L2 reverses twice, so they display in stored order.
 * So two right-to-left words joined by a space, `/`, digits or punctuation are flagged (`א/ב`,
 * `שלום עולם`), and so is a right-to-left word with digits (`ملف1.txt` displays as `1ملف.txt`).
 * A value without R, AL or AN characters never is.
 *
 * Assumptions: the client lays the question out as a left-to-right paragraph (its static text
 * starts with a left-to-right letter), and the static text right before and after each value
 * reaches a left-to-right letter before any digit or right-to-left letter; mcp-confirm's
 * templates do. Under a right-to-left paragraph direction forced by the client the display can
 * differ.
 *
 * @module
 */
import { BIDI_BRACKET_PAIRS, BIDI_CLASS_RANGES } from './bidiData.js';
import { BlockTable } from './blockTable.js';

/** Bidi_Class codes, as in bidiData.ts; 14–22 are the explicit formatting classes (LRE … PDI). */
export const Bc = {
  L: 0,
  R: 1,
  AL: 2,
  EN: 3,
  ES: 4,
  ET: 5,
  AN: 6,
  CS: 7,
  NSM: 8,
  BN: 9,
  B: 10,
  S: 11,
  WS: 12,
  ON: 13,
  FIRST_EXPLICIT: 14,
} as const;

let starts: Int32Array | undefined;
let ends: Int32Array | undefined;
let codes: Uint8Array | undefined;

function decodeRanges(): void {
  const entries = BIDI_CLASS_RANGES.split(';');
  starts = new Int32Array(entries.length);
  ends = new Int32Array(entries.length);
  codes = new Uint8Array(entries.length);
  let at = 0;
  entries.forEach((e, i) => {
    const [delta = '0', length = '0', code = '0'] = e.split(',');
    const start = at + parseInt(delta, 36);
    at = start + parseInt(length, 36);
    starts![i] = start;
    ends![i] = at;
    codes![i] = parseInt(code, 36);
  });
}

function lookup(cp: number): number {
  if (starts === undefined) decodeRanges();
  const s = starts!;
  let lo = 0;
  let hi = s.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((s[mid] ?? 0) > cp) hi = mid - 1;
    else if ((ends![mid] ?? 0) <= cp) lo = mid + 1;
    else return codes![mid] ?? Bc.L;
  }
  return Bc.L;
}

const classes = new BlockTable(lookup);

/**
 * The Bidi_Class of a code point (Unicode 17), as a {@link Bc} code; 14–22 are the explicit
 * formatting classes LRE, LRO, RLE, RLO, PDF, LRI, RLI, FSI, PDI.
 */
export function bidiClass(cp: number): number {
  return classes.get(cp);
}

let brackets: Map<number, { readonly pair: number; readonly open: boolean }> | undefined;
function bracketOf(cp: number): { readonly pair: number; readonly open: boolean } | undefined {
  if (brackets === undefined) {
    brackets = new Map();
    for (const entry of BIDI_BRACKET_PAIRS.split(';')) {
      const [o = '0', c = '0'] = entry.split(',');
      const open = parseInt(o, 36);
      const close = parseInt(c, 36);
      brackets.set(open, { pair: close, open: true });
      brackets.set(close, { pair: open, open: false });
    }
  }
  return brackets.get(cp);
}

/** Strong direction for N0/N1: L, or R (R, AL, EN and AN count as R); -1 for a neutral. */
function strongForNeutrals(t: number): number {
  if (t === Bc.L) return Bc.L;
  if (t === Bc.R || t === Bc.AL || t === Bc.EN || t === Bc.AN) return Bc.R;
  return -1;
}

const isNeutral = (t: number): boolean => t === Bc.ON || t === Bc.WS || t === Bc.B || t === Bc.S;

const HAS_NON_ASCII = /[^\x00-\x7F]/;

/** BD16 stack depth. */
const MAX_BRACKET_DEPTH = 63;

/**
 * Whether the text, laid out by TR #9 as described in the module documentation, shows some
 * characters out of stored order other than inside one right-to-left word or one number.
 *
 * Linear in the text's length. The text should hold no explicit formatting character, paragraph
 * or segment separator or boundary neutral (rendered text never does); if it does, the answer is
 * true (the layout is not predicted).
 *
 * @param text - the text shown inside the code span.
 * @returns true when a reader could see the characters in another order than stored.
 * @example
 * ```ts
 * import { reordersRtl } from './bidi.js';
 *
 * reordersRtl('/tmp/r/א/ב/ג.txt') // true
 * reordersRtl('שלום.txt')         // false
 * ```
 */
export function reordersRtl(text: string): boolean {
  if (!HAS_NON_ASCII.test(text)) return false; // ASCII holds no R, AL or AN
  const resolved = resolve(text);
  if (resolved === undefined) return true;
  const { levels, orig } = resolved;
  // L2: check each maximal run at level 1 or more.
  const n = levels.length;
  for (let i = 0; i < n;) {
    if (levels[i] === 0) {
      i++;
      continue;
    }
    let word = true;
    let number = true;
    let j = i;
    for (; j < n && levels[j] !== 0; j++) {
      if (levels[j] === 1) {
        number = false;
        const o = orig[j];
        if (o !== Bc.R && o !== Bc.AL && o !== Bc.NSM) word = false;
      } else word = false;
    }
    if (!word && !number) return true;
    i = j;
  }
  return false;
}

/**
 * The embedding levels TR #9 resolves for each code point of the text (see the module
 * documentation for the setting), or undefined when the text holds an explicit formatting
 * character, a paragraph or segment separator or a boundary neutral. Exported for tests.
 *
 * @returns levels (0, 1 or 2) and original Bidi_Class codes, one per code point.
 */
export function bidiLevels(text: string): { levels: Uint8Array; orig: Uint8Array } | undefined {
  return resolve(text, true);
}

function resolve(text: string, always = false): { levels: Uint8Array; orig: Uint8Array } | undefined {
  // Code points and their classes.
  const cps = new Int32Array(text.length);
  const orig = new Uint8Array(text.length);
  let rtl = false;
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    let cp = text.charCodeAt(i);
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < text.length) {
      const lo = text.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        cp = ((cp - 0xd800) << 10) + (lo - 0xdc00) + 0x10000;
        i += 1;
      }
    }
    const c = cp < 0x80 ? asciiClass(cp) : classes.get(cp);
    if (c >= Bc.FIRST_EXPLICIT || c === Bc.B || c === Bc.S || c === Bc.BN) return undefined;
    if (c === Bc.R || c === Bc.AL || c === Bc.AN) rtl = true;
    cps[n] = cp;
    orig[n] = c;
    n += 1;
  }
  if (!rtl && !always) return { levels: new Uint8Array(n), orig: orig.subarray(0, n) };
  const t = orig.slice(0, n);

  // W1: NSM takes the type of the previous character (sos = L at the start).
  for (let i = 0; i < n; i++) if (t[i] === Bc.NSM) t[i] = i === 0 ? Bc.L : (t[i - 1] ?? Bc.L);
  // W2: EN after AL (last strong) becomes AN. W3: AL becomes R.
  let last: number = Bc.L;
  for (let i = 0; i < n; i++) {
    const x = t[i];
    if (x === Bc.L || x === Bc.R || x === Bc.AL) last = x;
    else if (x === Bc.EN && last === Bc.AL) t[i] = Bc.AN;
  }
  for (let i = 0; i < n; i++) if (t[i] === Bc.AL) t[i] = Bc.R;
  // W4: a single ES between two EN becomes EN; a single CS between two numbers of one type
  // becomes that type.
  for (let i = 1; i < n - 1; i++) {
    const x = t[i];
    const a = t[i - 1];
    const b = t[i + 1];
    if (x === Bc.ES && a === Bc.EN && b === Bc.EN) t[i] = Bc.EN;
    else if (x === Bc.CS && a === b && (a === Bc.EN || a === Bc.AN)) t[i] = a;
  }
  // W5: a run of ET next to an EN becomes EN.
  for (let i = 0; i < n;) {
    if (t[i] !== Bc.ET) {
      i++;
      continue;
    }
    let j = i;
    while (j < n && t[j] === Bc.ET) j++;
    if ((i > 0 && t[i - 1] === Bc.EN) || (j < n && t[j] === Bc.EN)) for (let k = i; k < j; k++) t[k] = Bc.EN;
    i = j;
  }
  // W6: remaining separators and terminators become ON.
  for (let i = 0; i < n; i++) {
    const x = t[i];
    if (x === Bc.ES || x === Bc.ET || x === Bc.CS) t[i] = Bc.ON;
  }
  // W7: EN whose last strong type (sos = L) is L becomes L.
  last = Bc.L;
  for (let i = 0; i < n; i++) {
    const x = t[i];
    if (x === Bc.L || x === Bc.R) last = x;
    else if (x === Bc.EN && last === Bc.L) t[i] = Bc.L;
  }

  // N0: bracket pairs (BD16), resolved in order of their opening bracket; embedding direction L.
  const pairs: Array<readonly [number, number]> = [];
  const stack: Array<readonly [number, number]> = []; // [closing code point wanted, position]
  for (let i = 0; i < n; i++) {
    if (t[i] !== Bc.ON) continue;
    const b = bracketOf(cps[i] ?? 0);
    if (b === undefined) continue;
    if (b.open) {
      if (stack.length === MAX_BRACKET_DEPTH) break;
      stack.push([b.pair, i]);
    } else {
      for (let k = stack.length - 1; k >= 0; k--) {
        const top = stack[k];
        if (top !== undefined && top[0] === cps[i]) {
          pairs.push([top[1], i]);
          stack.length = k;
          break;
        }
      }
    }
  }
  pairs.sort((p, q) => p[0] - q[0]);
  // The strong type before an opening bracket, found with a cursor moving forward.
  let cursor = 0;
  let before: number = Bc.L;
  for (const [open, close] of pairs) {
    for (; cursor < open; cursor++) {
      const s = strongForNeutrals(t[cursor] ?? Bc.ON);
      if (s >= 0) before = s;
    }
    let hasL = false;
    let hasR = false;
    for (let k = open + 1; k < close && !hasL; k++) {
      const s = strongForNeutrals(t[k] ?? Bc.ON);
      if (s === Bc.L) hasL = true;
      else if (s === Bc.R) hasR = true;
    }
    let dir: number = -1;
    if (hasL) dir = Bc.L;
    else if (hasR) dir = before === Bc.R ? Bc.R : Bc.L;
    if (dir < 0) continue;
    for (const at of [open, close]) {
      t[at] = dir;
      // Nonspacing marks after a bracket take its new type.
      for (let k = at + 1; k < n && orig[k] === Bc.NSM; k++) t[k] = dir;
    }
  }

  // N1/N2: a run of neutrals between two strong types of one direction (EN/AN count as R; sos
  // and eos are L) takes it; otherwise the embedding direction, L.
  for (let i = 0; i < n;) {
    if (!isNeutral(t[i] ?? Bc.L)) {
      i++;
      continue;
    }
    let j = i;
    while (j < n && isNeutral(t[j] ?? Bc.L)) j++;
    const a = i === 0 ? Bc.L : strongForNeutrals(t[i - 1] ?? Bc.L);
    const b = j === n ? Bc.L : strongForNeutrals(t[j] ?? Bc.L);
    const dir = a === b ? a : Bc.L;
    for (let k = i; k < j; k++) t[k] = dir;
    i = j;
  }

  // I1 at level 0: L → 0, R → 1, EN and AN → 2.
  const levels = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const x = t[i];
    levels[i] = x === Bc.L ? 0 : x === Bc.R ? 1 : 2;
  }
  return { levels, orig: orig.subarray(0, n) };
}

const asciiClasses = Uint8Array.from({ length: 128 }, (_, cp) => lookup(cp));
function asciiClass(cp: number): number {
  return asciiClasses[cp] ?? Bc.L;
}
