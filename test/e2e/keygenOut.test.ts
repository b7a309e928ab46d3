/**
 * `mcp-confirm keygen --out FILE` through the built CLI as a subprocess: the key file is created
 * with mode 0600 (whatever the umask), never over an existing file or through a symbolic link, and
 * never in a directory that does not exist; the key it writes serves `--key-file`.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KeyRing } from 'mcp-confirm';
import { runProcess } from '../helpers/processes.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
let R: string;

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
});
beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-keygen-')));
});
afterEach(() => {
  rmSync(R, { recursive: true, force: true });
});

/** The CLI with `args`, under `umask` (a shell sets it, as a user's login would). */
const keygen = (args: string[], umask = '022') =>
  runProcess('/bin/sh', ['-c', `umask ${umask} && exec "$0" "$@"`, process.execPath, MAIN, 'keygen', ...args]);

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('mcp-confirm keygen --out FILE', () => {
  it.each(['022', '000'])(
    'writes a key file of mode 0600 under umask %s, printing no key on stdout, which --key-file accepts',
    async (umask) => {
      const out = join(R, 'keys.json');
      const r = await keygen(['--kid', 'k1', '--out', out], umask);
      expect(r.status).toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`wrote key file ${out}`);
      expect(modeOf(out)).toBe(0o600);
      const file = JSON.parse(readFileSync(out, 'utf8')) as { keys: Array<{ kid: string; k: string }> };
      expect(file.keys).toHaveLength(1);
      expect(file.keys[0]!.kid).toBe('k1');
      expect(Buffer.from(file.keys[0]!.k, 'base64url')).toHaveLength(32);
      expect(r.stderr).not.toContain(file.keys[0]!.k);
      // The file is a key ring the library (and so --key-file) opens.
      await expect(KeyRing.fromSpecs(file.keys)).resolves.toBeInstanceOf(KeyRing);
    },
  );

  it('refuses an existing file with exit 2, naming it, and leaves it byte for byte and mode for mode', async () => {
    const out = join(R, 'keys.json');
    const before = JSON.stringify({ keys: [{ kid: 'old', k: Buffer.alloc(32, 7).toString('base64url') }] });
    writeFileSync(out, before, { mode: 0o640 });
    const r = await keygen(['--out', out]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`--out ${out}: the file already exists`);
    expect(r.stderr).toContain('nothing was written');
    expect(readFileSync(out, 'utf8')).toBe(before);
    expect(modeOf(out)).toBe(0o640);
    // Control: another path in the same directory is written.
    const other = join(R, 'keys-2.json');
    expect((await keygen(['--out', other])).status).toBe(0);
    expect(modeOf(other)).toBe(0o600);
  });

  it('refuses a symbolic link, even a dangling one, and creates nothing where it points', async () => {
    const target = join(R, 'elsewhere.json');
    const link = join(R, 'keys.json');
    symlinkSync(target, link);
    const r = await keygen(['--out', link]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`--out ${link}:`);
    expect(r.stderr).toContain('nothing was written');
    expect(existsSync(target)).toBe(false);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(target);
  });

  it('refuses a directory that does not exist with exit 2, naming it, and creates nothing', async () => {
    const missing = join(R, 'no-such-dir');
    const r = await keygen(['--out', join(missing, 'keys.json')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`the directory ${missing} does not exist`);
    expect(existsSync(missing)).toBe(false);
    // Control: once the directory exists, the same path is written.
    mkdirSync(missing);
    expect((await keygen(['--out', join(missing, 'keys.json')])).status).toBe(0);
    expect(modeOf(join(missing, 'keys.json'))).toBe(0o600);
  });

  it('refuses a path whose directory is a file, and an empty --out, with exit 2', async () => {
    writeFileSync(join(R, 'plain'), 'x');
    const r = await keygen(['--out', join(R, 'plain', 'keys.json')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('not a directory');
    const empty = await keygen(['--out', '']);
    expect(empty.status).toBe(2);
    expect(empty.stderr).toContain('--out needs a file path');
  });

  it('control: without --out, prints the key file on stdout as before', async () => {
    const r = await keygen(['--kid', 'k9']);
    expect(r.status).toBe(0);
    const file = JSON.parse(r.stdout) as { keys: Array<{ kid: string; k: string }> };
    expect(file.keys[0]!.kid).toBe('k9');
  });
});
