import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultFsOps } from '../../src/fs/ops.js';
import { Roots } from '../../src/fs/roots.js';
import { isQuarantineName, newQuarantineName, QUARANTINE_PREFIX } from '../../src/fs/quarantine.js';
import { findQuarantineLeftovers } from '../../src/fs/target.js';
import { makeSandbox, osError, put, symlink, type Sandbox } from './helpers.js';

let sb: Sandbox;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

const Q1 = `${QUARANTINE_PREFIX}${'a'.repeat(32)}`;
const Q2 = `${QUARANTINE_PREFIX}${'0123456789abcdef'.repeat(2)}`;

describe('quarantine names', () => {
  it('are the prefix plus 32 lower-case hex digits, fresh each time', () => {
    const a = newQuarantineName();
    const b = newQuarantineName();
    expect(a).toMatch(/^\.mcp-confirm-quarantine-[0-9a-f]{32}$/);
    expect(a).not.toBe(b);
    expect(isQuarantineName(a)).toBe(true);
  });

  it('do not match look-alikes', () => {
    for (const name of [
      QUARANTINE_PREFIX,
      `${QUARANTINE_PREFIX}notes`,
      `${QUARANTINE_PREFIX}${'A'.repeat(32)}`,
      `x${Q1}`,
      `${Q1}.txt`,
    ]) {
      expect(isQuarantineName(name), name).toBe(false);
    }
  });
});

describe('findQuarantineLeftovers', () => {
  it('reports nothing for a clean tree', async () => {
    put(join(sb.allowed, 'a', 'b', 'file.txt'), 'x');
    expect(await findQuarantineLeftovers(await Roots.open([sb.allowed]))).toEqual([]);
  });

  it('reports quarantine-named files and directories at any depth, sorted, and deletes none of them', async () => {
    put(join(sb.allowed, Q1), 'top');
    put(join(sb.allowed, 'a', 'b', Q2), 'deep');
    mkdirSync(join(sb.allowed, 'a', Q1));
    put(join(sb.allowed, 'a', `${QUARANTINE_PREFIX}notes`), 'not one');
    const found = await findQuarantineLeftovers(await Roots.open([sb.allowed]));
    expect(found).toEqual([join(sb.allowed, 'a', Q1), join(sb.allowed, 'a', 'b', Q2), join(sb.allowed, Q1)].sort());
    expect(readFileSync(join(sb.allowed, Q1), 'utf8')).toBe('top');
    expect(readFileSync(join(sb.allowed, 'a', 'b', Q2), 'utf8')).toBe('deep');
    expect(existsSync(join(sb.allowed, 'a', Q1))).toBe(true);
  });

  it('does not follow a symlink out of the root', async () => {
    put(join(sb.outside, Q1), 'outside');
    symlink(sb.outside, join(sb.allowed, 'link'));
    expect(await findQuarantineLeftovers(await Roots.open([sb.allowed]))).toEqual([]);
  });

  it('reports a leftover once when roots are nested', async () => {
    put(join(sb.allowed, 'inner', Q1), 'x');
    const roots = await Roots.open([sb.allowed, join(sb.allowed, 'inner')]);
    expect(await findQuarantineLeftovers(roots)).toEqual([join(sb.allowed, 'inner', Q1)]);
  });

  it('passes over a directory it cannot read and still reports the rest', async () => {
    put(join(sb.allowed, 'locked', Q1), 'x');
    put(join(sb.allowed, 'open', Q2), 'y');
    const roots = await Roots.open([sb.allowed]);
    const found = await findQuarantineLeftovers(roots, {
      ops: {
        readdir: async (p) => {
          if (p.endsWith('locked')) throw osError('EACCES', 'scandir', p);
          return defaultFsOps.readdir(p);
        },
      },
    });
    expect(found).toEqual([join(sb.allowed, 'open', Q2)]);
  });

  it('stops after maxDirectories directories', async () => {
    put(join(sb.allowed, Q1), 'x');
    put(join(sb.allowed, 'a', Q2), 'y');
    const roots = await Roots.open([sb.allowed]);
    expect(await findQuarantineLeftovers(roots, { maxDirectories: 1 })).toEqual([join(sb.allowed, Q1)]);
  });
});
