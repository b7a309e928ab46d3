/**
 * The Lua scripts of {@link RedisLedger} (src/store/redis.ts) and their SHA-1 digests (the
 * `EVALSHA` names): each atomic step of the Redis store is one script. The ledger's two scripts
 * carry its key names and bounds as constants of the script text; the others take their keys.
 *
 * > [!WARNING]
 * > These texts and the key layout they use are the stored format: processes of another version
 * > may run them against the same keys, and a changed key name would forget tombstones. Change
 * > them only with a test that a store written before still refuses its spent states
 * > (test/store/previousVersion.test.ts, test/store/redis.test.ts).
 *
 * @module
 */
import { createHash } from 'node:crypto';

/**
 * TTL of the zsets, in milliseconds, when an issue finds it shorter than the new entry's
 * own TTL (or unset): 24 hours on top of that entry's TTL. The zsets therefore always
 * outlive every entry they count, and an idle principal's or namespace's zsets go away.
 * Stale members are removed by score before a bound refuses.
 */
export const ZSET_TTL_MS = 24 * 60 * 60 * 1000;

/** TTL of the spend list, set when it is created, in milliseconds. */
export const SPENT_LIST_TTL_MS = 24 * 60 * 60 * 1000;

/** A Lua string literal of `text` (no control characters: the namespace refuses them). */
export const luaString = (text: string): string => `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;

/**
 * The issue script of one ledger: its key names and bounds are constants of the script
 * text, so each call sends only what changes. KEYS: entry (`…jti:JTI`). ARGV: principal,
 * expiresAtMs, nowMs, px (the entry's TTL, ms).
 *
 * Seven commands: ZCARD of both zsets, SET NX PX, ZADD to both zsets, and PTTL of both
 * (a zset whose TTL is shorter than the new entry's, or unset because ZADD just created
 * it, gets PEXPIRE px + 24 hours).
 */
export function issueScript(prefix: string, maxPerPrincipal: number, maxTotal: number): string {
  return `
local pz = ${luaString(prefix + 'p:')} .. ARGV[1]
local out = ${luaString(prefix + 'out')}
if redis.call('ZCARD', pz) >= ${maxPerPrincipal} or redis.call('ZCARD', out) >= ${maxTotal} then
  redis.call('ZREMRANGEBYSCORE', out, '-inf', ARGV[3])
  redis.call('ZREMRANGEBYSCORE', pz, '-inf', ARGV[3])
  if redis.call('ZCARD', pz) >= ${maxPerPrincipal} then return 'capacity-principal' end
  if redis.call('ZCARD', out) >= ${maxTotal} then return 'capacity-total' end
end
if not redis.call('SET', KEYS[1], 'o|' .. ARGV[2] .. '|' .. ARGV[1], 'NX', 'PX', ARGV[4]) then return 'duplicate' end
local jti = string.sub(KEYS[1], ${Buffer.byteLength(prefix + 'jti:') + 1})
redis.call('ZADD', out, ARGV[2], jti)
redis.call('ZADD', pz, ARGV[2], jti)
local px = tonumber(ARGV[4])
if redis.call('PTTL', out) < px then redis.call('PEXPIRE', out, px + ${ZSET_TTL_MS}) end
if redis.call('PTTL', pz) < px then redis.call('PEXPIRE', pz, px + ${ZSET_TTL_MS}) end
return 'issued'
`;
}

/**
 * The spend script of one ledger (key names and the tombstone cap are constants of the
 * text). KEYS: entry (`…jti:JTI`). ARGV: nowMs.
 *
 * The entry is replaced by a tombstone and its old value read in one command
 * (`SET … XX GET KEEPTTL`): missing → 'unknown' (nothing written); a tombstone (this
 * version's `s|` or an earlier version's `s|EXPIRES_AT_MS`) → 'already-spent'; an
 * outstanding `o|EXPIRES_AT_MS|PRINCIPAL` → out of both zsets, then 'expired' (entry
 * deleted) or 'spent'. Anything else is put back as it was and is an error.
 *
 * The tombstone cap is kept with a list in spend order (RPUSH, O(1), whose reply is the
 * new length, so no separate count). When a spend takes it beyond the cap, the oldest
 * `excess + evictSlack` spends are popped at once (LPOP with a count, in chunks of at most
 * 1,000) and those still tombstones deleted (one MGET, one DEL per chunk), as the memory
 * ledger drops its oldest: between `maxTotal - evictSlack` and `maxTotal` tombstones stay.
 */
export function spendScript(prefix: string, maxTotal: number): string {
  return `
local v = redis.call('SET', KEYS[1], 's|', 'XX', 'GET', 'KEEPTTL')
if not v then return 'unknown' end
local kind = string.sub(v, 1, 2)
if kind == 's|' then return 'already-spent' end
local bar = string.find(v, '|', 3, true)
local exp = kind == 'o|' and bar and tonumber(string.sub(v, 3, bar - 1))
if not exp then
  redis.call('SET', KEYS[1], v, 'KEEPTTL')
  return redis.error_reply('ERR mcp-confirm: unexpected ledger value')
end
local jti = string.sub(KEYS[1], ${Buffer.byteLength(prefix + 'jti:') + 1})
redis.call('ZREM', ${luaString(prefix + 'out')}, jti)
redis.call('ZREM', ${luaString(prefix + 'p:')} .. string.sub(v, bar + 1), jti)
if tonumber(ARGV[1]) >= exp then
  redis.call('DEL', KEYS[1])
  return 'expired'
end
local list = ${luaString(prefix + 'spent-order')}
local n = redis.call('RPUSH', list, jti)
if n == 1 then redis.call('PEXPIRE', list, ${SPENT_LIST_TTL_MS}) end
if n > ${maxTotal} then
  local excess = n - ${maxTotal - evictSlack(maxTotal)}
  while excess > 0 do
    local old = redis.call('LPOP', list, math.min(excess, 1000))
    if not old then break end
    excess = excess - #old
    local keys = {}
    for i = 1, #old do keys[i] = ${luaString(prefix + 'jti:')} .. old[i] end
    local values = redis.call('MGET', unpack(keys))
    local dead = {}
    for i = 1, #keys do
      local ov = values[i]
      if ov and string.sub(ov, 1, 2) == 's|' then dead[#dead + 1] = keys[i] end
    end
    if #dead > 0 then redis.call('DEL', unpack(dead)) end
  end
end
return 'spent'
`;
}

/**
 * How many tombstones below the cap one eviction goes (⌊maxTotal / 1024⌋: 97 for the
 * default 100,000, 0 below 1,024), so that at the cap a spend evicts once per
 * `evictSlack + 1` spends instead of at every spend.
 */
export function evictSlack(maxTotal: number): number {
  return Math.floor(maxTotal / 1024);
}

export const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');

/** Open an approval. KEYS: ap:ID, apj:JTI. ARGV: id, jti, principal, view, expiresAtMs, px. */
export const APPROVAL_OPEN_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return 'duplicate' end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'jti', ARGV[2], 'principal', ARGV[3], 'view', ARGV[4], 'exp', ARGV[5],
  'status', 'pending', 'dec', '0', 'approver', '', 'cred', '')
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[6])
return 'opened'
`;

/**
 * Read an approval as JSON text. KEYS: ap:ID (ARGV[1] '') or apj:JTI (ARGV[1] the ap: prefix, to follow the index).
 */
export const APPROVAL_READ_SCRIPT = `
local key = KEYS[1]
if ARGV[1] ~= '' then
  local id = redis.call('GET', key)
  if not id then return 'none' end
  key = ARGV[1] .. id
end
local v = redis.call('HGETALL', key)
if #v == 0 then return 'none' end
local o = {}
for i = 1, #v, 2 do o[v[i]] = v[i + 1] end
return cjson.encode(o)
`;

/** Decide an approval once. KEYS: ap:ID. ARGV: status, approver, credentialId, nowMs. */
export const APPROVAL_DECIDE_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'status', 'exp')
if not v[1] then return 'unknown' end
if tonumber(ARGV[4]) >= tonumber(v[2]) then return 'expired' end
if v[1] ~= 'pending' then return 'already-decided' end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'approver', ARGV[2], 'cred', ARGV[3], 'dec', ARGV[4])
return 'decided'
`;

/**
 * Store a challenge once, keeping at most ARGV[3] per approval. KEYS: ch:CHALLENGE, chl:ID (the
 * approval's challenge keys, oldest first). ARGV: "expiresAtMs|id", px, most per approval.
 * Beyond the most, the oldest keys of the list are deleted (one already taken or expired is
 * deleted again, harmlessly); the list lives as long as its newest challenge.
 */
export const CHALLENGE_PUT_SCRIPT = `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 'duplicate' end
local n = redis.call('RPUSH', KEYS[2], KEYS[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
local most = tonumber(ARGV[3])
while n > most do
  redis.call('DEL', redis.call('LPOP', KEYS[2]))
  n = n - 1
end
return 'put'
`;

/** Take a challenge once. KEYS: ch:CHALLENGE. */
export const CHALLENGE_TAKE_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if not v then return 'none' end
redis.call('DEL', KEYS[1])
return v
`;

/** Move a signature counter forward. KEYS: ctr:CREDENTIAL. ARGV: newCounter, enrolledCounter. */
export const COUNTER_SCRIPT = `
local stored = tonumber(redis.call('GET', KEYS[1]) or ARGV[2])
local nextValue = tonumber(ARGV[1])
if (nextValue == 0 and stored == 0) or nextValue > stored then
  redis.call('SET', KEYS[1], ARGV[1])
  return 'advanced'
end
return 'refused'
`;

/**
 * Record an audit trail head: replaced for another trail, moved forward for the same one, else kept.
 * KEYS: ah:PATH. ARGV: trail, seq, mac.
 */
export const AUDIT_HEAD_RECORD_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'trail', 'seq')
if v[1] == ARGV[1] and tonumber(v[2]) >= tonumber(ARGV[2]) then return 'kept' end
redis.call('HSET', KEYS[1], 'trail', ARGV[1], 'seq', ARGV[2], 'mac', ARGV[3])
return 'recorded'
`;

/** Read an audit trail head as "trail|seq|mac", or 'none'. KEYS: ah:PATH. */
export const AUDIT_HEAD_READ_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'trail', 'seq', 'mac')
if not v[1] then return 'none' end
return v[1] .. '|' .. v[2] .. '|' .. v[3]
`;

export const APPROVAL_OPEN_SHA = sha1(APPROVAL_OPEN_SCRIPT);
export const AUDIT_HEAD_RECORD_SHA = sha1(AUDIT_HEAD_RECORD_SCRIPT);
export const AUDIT_HEAD_READ_SHA = sha1(AUDIT_HEAD_READ_SCRIPT);
export const APPROVAL_READ_SHA = sha1(APPROVAL_READ_SCRIPT);
export const APPROVAL_DECIDE_SHA = sha1(APPROVAL_DECIDE_SCRIPT);
export const CHALLENGE_PUT_SHA = sha1(CHALLENGE_PUT_SCRIPT);
export const CHALLENGE_TAKE_SHA = sha1(CHALLENGE_TAKE_SCRIPT);
export const COUNTER_SHA = sha1(COUNTER_SCRIPT);
