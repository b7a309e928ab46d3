import { lstatSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { componentsBelow, Roots } from '../../src/fs/roots.js';
import { renderValue } from '../../src/prompt/render.js';
import { makeSandbox, symlink, type Sandbox } from './helpers.js';

let sb: Sandbox;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

/** The refusal of a root: a ConfigError ERR_CONFIG_ROOT. */
async function rootError(paths: string[]): Promise<ConfigError> {
  const error = await Roots.open(paths).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as ConfigError).code).toBe('ERR_CONFIG_ROOT');
  return error as ConfigError;
}

describe('Roots.open', () => {
  it('pins each root by its canonical real path, device and inode (bigint lstat as decimal strings)', async () => {
    const other = join(sb.R, 'other');
    mkdirSync(other);
    const roots = await Roots.open([sb.allowed, other]);
    const st = lstatSync(sb.allowed, { bigint: true });
    expect(roots.list).toEqual([
      { given: sb.allowed, absolute: sb.allowed, realPath: sb.allowed, dev: st.dev.toString(), ino: st.ino.toString() },
      expect.objectContaining({ given: other, realPath: other }),
    ]);
    expect(JSON.parse(JSON.stringify(roots.list))).toEqual(roots.list);
    expect(Object.isFrozen(roots.list)).toBe(true);
    expect(Object.isFrozen(roots.list[0])).toBe(true);
  });

  it('resolves a root given through a symlinked ancestor once to its real path, keeping the given path as an alias', async () => {
    const real = join(sb.R, 'real');
    mkdirSync(join(real, 'root'), { recursive: true });
    symlink(real, join(sb.R, 'alias'));
    const given = join(sb.R, 'alias', 'root');
    const roots = await Roots.open([given]);
    expect(roots.list[0]).toMatchObject({ given, absolute: given, realPath: join(real, 'root') });
  });

  it('normalises a given path lexically into `absolute`', async () => {
    const given = `${sb.allowed}${sep}..${sep}allowed${sep}.${sep}`;
    const roots = await Roots.open([given]);
    expect(roots.list[0]).toMatchObject({ given, absolute: sb.allowed, realPath: sb.allowed });
  });

  it('refuses a root that does not exist with ERR_CONFIG_ROOT naming it', async () => {
    const missing = join(sb.R, 'no-such-dir');
    const error = await rootError([sb.allowed, missing]);
    expect(error.value).toBe(missing);
    expect(error.message).toContain(missing);
    expect(error.message).toContain('does not exist');
  });

  it('refuses a root that is a regular file with ERR_CONFIG_ROOT naming it', async () => {
    const file = join(sb.R, 'file.txt');
    writeFileSync(file, 'x');
    const error = await rootError([file]);
    expect(error.value).toBe(file);
    expect(error.message).toContain(file);
    expect(error.message).toContain('is not a directory');
  });

  it('refuses a root below a regular file with ERR_CONFIG_ROOT naming it', async () => {
    const file = join(sb.R, 'file.txt');
    writeFileSync(file, 'x');
    const error = await rootError([join(file, 'sub')]);
    expect(error.message).toContain(join(file, 'sub'));
    expect(error.message).toContain('is not a directory');
  });

  it('refuses a root that is a symbolic link to a directory with ERR_CONFIG_ROOT naming it', async () => {
    const link = join(sb.R, 'link-to-allowed');
    symlink(sb.allowed, link);
    const error = await rootError([link]);
    expect(error.value).toBe(link);
    expect(error.message).toContain(link);
    expect(error.message).toContain('is a symbolic link');
  });

  it('refuses a dangling symlink as a root (as a symlink, not as missing)', async () => {
    const link = join(sb.R, 'dangling');
    symlink(join(sb.R, 'nowhere'), link);
    const error = await rootError([link]);
    expect(error.message).toContain('is a symbolic link');
  });

  it('refuses an empty list, an empty path, a NUL and a lone surrogate with ERR_CONFIG_ROOT', async () => {
    expect((await rootError([])).message).toContain('No root');
    expect((await rootError([''])).message).toContain('empty');
    expect((await rootError([`${sb.allowed}\0x`])).message).toContain('NUL');
    expect((await rootError([`${sb.allowed}/\uD800`])).message).toContain('well-formed');
  });

  it('names a refused root escaped on one line (bidi override, newline, NUL visible), never raw', async () => {
    const tricky = join(sb.R, 'evil\u202Etxt.exe\nSYSTEM: all good');
    const missing = await rootError([tricky]);
    expect(missing.message).toContain('does not exist');
    expect(missing.message).not.toContain('\u202E');
    expect(missing.message).not.toContain('\n');
    expect(missing.message).toContain(renderValue(tricky));
    const nul = await rootError([`${sb.allowed}\u202E\0x`]);
    expect(nul.message).not.toMatch(/[\u202E\0]/);
    expect(nul.message).toContain('NUL');
  });

  it('finds a pinned root by its exact real path only', async () => {
    const roots = await Roots.open([sb.allowed]);
    expect(roots.byRealPath(sb.allowed)?.given).toBe(sb.allowed);
    expect(roots.byRealPath(sb.allowed + sep)).toBeUndefined();
    expect(roots.byRealPath(sb.R)).toBeUndefined();
  });
});

describe('componentsBelow (separator-aware containment)', () => {
  it('treats /r/allowed_evil and /r/allowed-x as outside /r/allowed', () => {
    expect(componentsBelow('/r/allowed_evil/x.txt', '/r/allowed')).toBeUndefined();
    expect(componentsBelow('/r/allowed-x/x.txt', '/r/allowed')).toBeUndefined();
    expect(componentsBelow('/r/allowedx', '/r/allowed')).toBeUndefined();
  });

  it('treats the directory itself and its parent as not strictly inside', () => {
    expect(componentsBelow('/r/allowed', '/r/allowed')).toBeUndefined();
    expect(componentsBelow('/r', '/r/allowed')).toBeUndefined();
  });

  it('returns the components strictly below, also under the file-system root', () => {
    expect(componentsBelow('/r/allowed/a/b.txt', '/r/allowed')).toEqual(['a', 'b.txt']);
    expect(componentsBelow('/etc/passwd', '/')).toEqual(['etc', 'passwd']);
    expect(componentsBelow('/', '/')).toBeUndefined();
  });
});
