import { randomUUID } from 'node:crypto';
import { RedisLedger } from '../../src/store/redis.js';
import { approvalStoreContract } from './approvalContract.js';
import { approvalQuorumContract } from './approvalQuorumContract.js';
import { linkStoreContract } from './linkContract.js';

/** Missing or unreachable Redis is a failure, never a skip. */
function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url)
    throw new Error(
      'REDIS_URL is not set: start Redis with scripts/start-redis.sh and export REDIS_URL=redis://127.0.0.1:PORT',
    );
  return url;
}

approvalStoreContract('RedisLedger', () =>
  RedisLedger.open({ url: redisUrl(), namespace: `test-${randomUUID()}`, connectTimeoutMs: 3_000 }),
);

// Two clients on one namespace: concurrent steps spread over both.
approvalQuorumContract('RedisLedger', async () => {
  const namespace = `test-${randomUUID()}`;
  return Promise.all([0, 1].map(() => RedisLedger.open({ url: redisUrl(), namespace, connectTimeoutMs: 3_000 })));
});

linkStoreContract('RedisLedger', async () => {
  const namespace = `test-${randomUUID()}`;
  return [
    await RedisLedger.open({ url: redisUrl(), namespace, connectTimeoutMs: 3_000 }),
    await RedisLedger.open({ url: redisUrl(), namespace, connectTimeoutMs: 3_000 }),
  ];
});
