/**
 * The Big List of Naughty Strings (test/fixtures/blns.json, MIT, see blns.LICENSE beside it):
 * every string the file system accepts as a name gives a sound question.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { question, renderValueParts } from '../../src/prompt/render.js';
import { FORBIDDEN, LINE_BREAK, decodeBody } from './helpers.js';

const blns = JSON.parse(readFileSync(new URL('../fixtures/blns.json', import.meta.url), 'utf8')) as string[];
const ask = (name: string): string => question`Permanently delete ${name}?`;
const lines = (s: string): number => s.split(LINE_BREAK).length;

/** Whether the name passes the POSIX rules a name must meet before trying the file system. */
function plausibleName(s: string): boolean {
  return (
    s !== '' && s !== '.' && s !== '..' && !s.includes('/') && !s.includes('\0') && Buffer.byteLength(s, 'utf8') <= 255
  );
}

describe('blns corpus', () => {
  let dir: string;
  let accepted: string[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-blns-'));
    accepted = [...new Set(blns)].filter((name) => {
      if (!plausibleName(name)) return false;
      try {
        writeFileSync(join(dir, name), 'x', { flag: 'wx' });
        return true;
      } catch {
        return false;
      }
    });
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('loads the fixture and the file system accepts hundreds of its strings as names', () => {
    expect(blns.length).toBe(515);
    expect(accepted.length).toBeGreaterThan(300); // 329 on Linux: 173 contain a slash
  });

  it('gives every accepted name a question with as many lines as a plain name (one)', () => {
    const plain = lines(ask('cache.txt'));
    expect(plain).toBe(1);
    for (const name of accepted) expect(lines(ask(name)), JSON.stringify(name)).toBe(plain);
  });

  it('lets no raw Cc, Zl, Zp, bidi, default-ignorable or odd whitespace reach the question', () => {
    for (const name of accepted) expect(FORBIDDEN.test(ask(name)), JSON.stringify(name)).toBe(false);
  });

  it('gives well-formed questions', () => {
    for (const name of accepted) expect(ask(name).isWellFormed(), JSON.stringify(name)).toBe(true);
  });

  it('gives pairwise distinct questions', () => {
    const questions = new Map<string, string>();
    for (const name of accepted) {
      const q = ask(name);
      expect(questions.get(q), `${JSON.stringify(name)} vs ${JSON.stringify(questions.get(q))}`).toBeUndefined();
      questions.set(q, name);
    }
    expect(questions.size).toBe(accepted.length);
  });

  it('shows each accepted name whole and exactly (or both ends of it when cut)', () => {
    for (const name of accepted) {
      const parts = renderValueParts(name);
      if (!parts.cut) {
        expect(decodeBody(parts.body)).toBe(name);
        continue;
      }
      const [head = '', tail = ''] = parts.body.split('…');
      expect(name.startsWith(decodeBody(head))).toBe(true);
      expect(name.endsWith(decodeBody(tail))).toBe(true);
    }
  });
});
