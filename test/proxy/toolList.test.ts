/**
 * ToolListView's maximum age (`--list-max-age`), against a counting source: which reads are served
 * from the kept list and which list the upstream again. Time is the test's clock.
 */
import type { Tool } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { ToolListView } from '../../src/proxy/toolList.js';

/** A source whose every listing is counted, answering the tool `t` with the listing's number in its description. */
function countingSource() {
  const source = {
    listings: 0,
    async listTools(): Promise<Tool[]> {
      const n = ++source.listings;
      return [{ name: 't', description: `listing ${n}`, inputSchema: { type: 'object' } }];
    },
  };
  return source;
}

const descriptionOf = async (view: ToolListView, fresh = false) =>
  (await view.tools(fresh ? { fresh: true } : {})).get('t')?.description;

describe('ToolListView with a maximum age (an upstream that announces no list changes)', () => {
  it('serves reads that are not fresh from the list kept, until the age has passed since its listing started', async () => {
    const clock = { ms: 0 };
    const source = countingSource();
    const view = new ToolListView(source, { cache: false, maxAgeMs: 1_000, now: () => clock.ms });
    expect(view.caches).toBe(true);
    expect(await descriptionOf(view)).toBe('listing 1');
    clock.ms = 999;
    expect(await descriptionOf(view)).toBe('listing 1');
    expect(source.listings).toBe(1);
    clock.ms = 1_000;
    expect(await descriptionOf(view)).toBe('listing 2');
    expect(source.listings).toBe(2);
  });

  it('a fresh read (a confirmed call’s rounds, a client’s tools/list) always lists again, and the list it read is then kept', async () => {
    const clock = { ms: 0 };
    const source = countingSource();
    const view = new ToolListView(source, { cache: false, maxAgeMs: 1_000, now: () => clock.ms });
    expect(await descriptionOf(view)).toBe('listing 1');
    expect(await descriptionOf(view, true)).toBe('listing 2');
    expect(await descriptionOf(view, true)).toBe('listing 3');
    clock.ms = 500;
    expect(await descriptionOf(view)).toBe('listing 3');
    expect(source.listings).toBe(3);
  });

  it('a list_changed notice ends the kept list at once, whatever its age', async () => {
    const clock = { ms: 0 };
    const source = countingSource();
    const view = new ToolListView(source, { cache: false, maxAgeMs: 1_000, now: () => clock.ms });
    expect(await descriptionOf(view)).toBe('listing 1');
    view.changed();
    expect(await descriptionOf(view)).toBe('listing 2');
  });

  it('a clock that went back ends the kept list (its age is unknown)', async () => {
    const clock = { ms: 10_000 };
    const source = countingSource();
    const view = new ToolListView(source, { cache: false, maxAgeMs: 1_000, now: () => clock.ms });
    expect(await descriptionOf(view)).toBe('listing 1');
    clock.ms = 9_999;
    expect(await descriptionOf(view)).toBe('listing 2');
  });

  it('control: without an age (the default) nothing is kept: every read lists', async () => {
    const source = countingSource();
    const view = new ToolListView(source, { cache: false });
    expect(view.caches).toBe(false);
    expect(await descriptionOf(view)).toBe('listing 1');
    expect(await descriptionOf(view)).toBe('listing 2');
  });

  it('control: an upstream that announces list changes keeps its list until a notice, whatever the age', async () => {
    const clock = { ms: 0 };
    const source = countingSource();
    const view = new ToolListView(source, { cache: true, maxAgeMs: 1_000, now: () => clock.ms });
    expect(await descriptionOf(view)).toBe('listing 1');
    clock.ms = 1_000_000;
    expect(await descriptionOf(view)).toBe('listing 1');
    view.changed();
    expect(await descriptionOf(view)).toBe('listing 2');
  });

  it('concurrent reads past the age share one listing started after they asked', async () => {
    const clock = { ms: 0 };
    const source = countingSource();
    const view = new ToolListView(source, { cache: false, maxAgeMs: 1_000, now: () => clock.ms });
    expect(await descriptionOf(view)).toBe('listing 1');
    clock.ms = 2_000;
    const all = await Promise.all([descriptionOf(view), descriptionOf(view), descriptionOf(view)]);
    expect(all).toEqual(['listing 2', 'listing 2', 'listing 2']);
    expect(source.listings).toBe(2);
  });
});
