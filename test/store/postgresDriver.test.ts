/**
 * The PostgreSQL store without its driver: `pg` is an optional peer dependency, loaded only when the
 * store is opened. Here the module `pg` is replaced by one that fails to load, as a missing package does.
 */
import { describe, expect, it, vi } from 'vitest';
import type { ConfigError } from '../../src/errors.js';
import { rejection } from '../helpers/rejections.js';

describe('PostgresStore without the pg package', () => {
  it('refuses to open with ERR_CONFIG_STORE_DRIVER in one sentence naming pg; control: with pg it gets past loading the driver', async () => {
    const { PostgresStore } = await import('../../src/store/postgres.js');
    // Control: the real driver loads (the store is created; nothing is connected yet).
    const store = await PostgresStore.create({ url: 'postgres://127.0.0.1:9/db' });
    await store.close();
    vi.resetModules();
    vi.doMock('pg', () => {
      throw Object.assign(new Error("Cannot find package 'pg'"), { code: 'ERR_MODULE_NOT_FOUND' });
    });
    try {
      const fresh = await import('../../src/store/postgres.js');
      const error = await rejection(fresh.PostgresStore.create({ url: 'postgres://127.0.0.1:9/db' }));
      // The modules were loaded afresh, so the class is the fresh module's: compared by name.
      expect((error as Error).name).toBe('ConfigError');
      expect((error as ConfigError).code).toBe('ERR_CONFIG_STORE_DRIVER');
      expect((error as Error).message).toBe(
        'The PostgreSQL store needs the pg package, which is not installed (npm install pg).',
      );
    } finally {
      vi.doUnmock('pg');
      vi.resetModules();
    }
  });
});
