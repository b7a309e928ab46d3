/**
 * The Lua scripts of the Redis {@link LinkStore} steps (see `redis.ts`), one script per step, so
 * each is atomic. Keys, all under the ledger's namespace prefix (one hash tag, one cluster slot):
 * - `lk:KEY` — a link: a hash of the approval `id`, what is `kept`, and `pk` (the principal's
 *   link set key); expires with its approval.
 * - `lkp:HASH` — the principal's link approvals: a sorted set of approval ids scored by expiry,
 *   HASH the SHA-256 of the principal (hex); what the pending count reads.
 * - `ap:ID`, `apj:JTI` — the approval and its jti index, as `openApproval` writes them.
 *
 * @module
 */
import { sha1 } from './redisScripts.js';

/**
 * Open an approval and its link, unless the key has a live link or the principal has ARGV[9]
 * pending link approvals. KEYS: lk:KEY, lkp:HASH, ap:ID, apj:JTI. ARGV: id, jti, principal, view,
 * expiresAtMs, px, kept, nowMs, maxPending, the ap: prefix, the quorum size ('' for one approver).
 */
export const LINK_OPEN_SCRIPT = `
local now = tonumber(ARGV[8])
local cur = redis.call('HGET', KEYS[1], 'id')
if cur then
  local e = redis.call('HGET', ARGV[10] .. cur, 'exp')
  if e and now < tonumber(e) then return 'exists' end
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[8])
local n = 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local v = redis.call('HMGET', ARGV[10] .. id, 'status', 'exp')
  if v[1] == 'pending' and now < tonumber(v[2]) then n = n + 1 else redis.call('ZREM', KEYS[2], id) end
end
if n >= tonumber(ARGV[9]) then return 'too-many' end
if redis.call('EXISTS', KEYS[3]) == 1 or redis.call('EXISTS', KEYS[4]) == 1 then return 'duplicate' end
redis.call('HSET', KEYS[3], 'id', ARGV[1], 'jti', ARGV[2], 'principal', ARGV[3], 'view', ARGV[4], 'exp', ARGV[5],
  'status', 'pending', 'dec', '0', 'approver', '', 'cred', '')
if ARGV[11] and ARGV[11] ~= '' then redis.call('HSET', KEYS[3], 'req', ARGV[11]) end
redis.call('PEXPIRE', KEYS[3], ARGV[6])
redis.call('SET', KEYS[4], ARGV[1], 'PX', ARGV[6])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'kept', ARGV[7], 'pk', KEYS[2])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[6]) then redis.call('PEXPIRE', KEYS[2], ARGV[6]) end
return 'opened'
`;

/**
 * Read a link's approval: 'none', or JSON text `{"kept": KEPT, "approval": HASH}` (HASH: the approval hash).
 * KEYS: lk:KEY. ARGV: the ap: prefix.
 */
export const LINK_READ_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'id', 'kept')
if not v[1] then return 'none' end
local a = redis.call('HGETALL', ARGV[1] .. v[1])
if #a == 0 then return 'none' end
local o = {}
for i = 1, #a, 2 do o[a[i]] = a[i + 1] end
return cjson.encode({ kept = v[2], approval = o })
`;

/** Finish a link when it points to the approval ARGV[1]. KEYS: lk:KEY. */
export const LINK_FINISH_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'id', 'pk')
if v[1] ~= ARGV[1] then return 'no' end
redis.call('DEL', KEYS[1])
if v[2] then redis.call('ZREM', v[2], ARGV[1]) end
return 'finished'
`;

export const LINK_OPEN_SHA = sha1(LINK_OPEN_SCRIPT);
export const LINK_READ_SHA = sha1(LINK_READ_SCRIPT);
export const LINK_FINISH_SHA = sha1(LINK_FINISH_SCRIPT);
