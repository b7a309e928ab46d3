import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { SqliteLedger } from '../../src/store/sqlite.js';
import { approvalStoreContract } from './approvalContract.js';
import { approvalQuorumContract } from './approvalQuorumContract.js';
import { linkStoreContract } from './linkContract.js';

const dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-approval-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

approvalStoreContract('SqliteLedger', () => new SqliteLedger({ path: join(dir, `${randomUUID()}.db`) }));

// Two connections on one file: concurrent steps spread over both.
approvalQuorumContract('SqliteLedger', async () => {
  const path = join(dir, `${randomUUID()}.db`);
  return [new SqliteLedger({ path }), new SqliteLedger({ path })];
});

linkStoreContract('SqliteLedger', async () => {
  const path = join(dir, `${randomUUID()}.db`);
  return [new SqliteLedger({ path }), new SqliteLedger({ path })];
});
