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

// ---- Grants and plans (GrantStore). Key names and bounds are constants of each ledger's script text,
// as for issue and spend; a call sends its record's key and the values that change.

/**
 * Lua of one ledger: `ended(id, expText, now)`, called when a grant ends by its last use or by revocation
 * (never by expiry): it goes into the `gr-ended` zset (score: its expiry), kept with its hash until
 * its expiry so that a take can say why; beyond `maxGrants` ended grants, expired members are
 * removed and the ones expiring first popped and their hashes deleted.
 */
function endedGrantLua(prefix: string, maxGrants: number): string {
  return `
local function ended(id, expText, now)
  local e = ${luaString(prefix + 'gr-ended')}
  redis.call('ZADD', e, expText, id)
  local px = tonumber(expText) - now + ${ZSET_TTL_MS}
  if redis.call('PTTL', e) < px then redis.call('PEXPIRE', e, math.ceil(px)) end
  if redis.call('ZCARD', e) > ${maxGrants} then
    redis.call('ZREMRANGEBYSCORE', e, '-inf', now)
    local excess = redis.call('ZCARD', e) - ${maxGrants}
    if excess > 0 then
      local old = redis.call('ZPOPMIN', e, excess)
      for i = 1, #old, 2 do redis.call('DEL', ${luaString(prefix + 'gr:')} .. old[i]) end
    end
  end
end
`;
}

/**
 * Lua of one ledger: `keep(key, px)`, a zset's TTL made at least `px` + 24 hours when it is shorter than
 * `px` (or unset), as the issue script does for its zsets: a zset never expires before a record it counts.
 */
const KEEP_LUA = `
local function keep(key, px)
  if redis.call('PTTL', key) < px then redis.call('PEXPIRE', key, px + ${ZSET_TTL_MS}) end
end
`;

/**
 * The spendGranting script of one ledger: the ledger's spend script, byte for byte, as the body of
 * a local function, then (only when it answered `'spent'`) the grant's creation, in one script.
 * KEYS: entry (`…jti:JTI`), grant (`…gr:ID`), the principal and binding's zset (`…gr-b:BK`, `BK`
 * the digest of the two). ARGV: nowMs, principal, audience, tool, scope, binding, summary,
 * policyDigest, approver, maxUses, createdAtMs, expiresAtMs, px (the grant's TTL).
 *
 * Answers `'duplicate'` (the grant's key exists: nothing spent), `SPEND|none` for a spend that did
 * not spend, `'spent|full'` when the principal and binding's `gr-b:BK` or the namespace's
 * `gr-live` zset (live grants, score: expiry; expired members removed first) is at its bound, else
 * `'spent|created'`: the `gr:ID` hash written with its TTL (`bk` = `BK`), its id added to the
 * zsets `gr-live`, `gr-p:PRINCIPAL` and `gr-b:BK` (a grant of one use is created ended, into
 * `gr-ended` instead).
 */
export function spendGrantingScript(
  prefix: string,
  maxTotal: number,
  bounds: { maxGrantsPerPrincipal: number; maxGrants: number },
): string {
  return `
local function spend()
${spendScript(prefix, maxTotal)}
end
${endedGrantLua(prefix, bounds.maxGrants)}${KEEP_LUA}
if redis.call('EXISTS', KEYS[2]) == 1 then return 'duplicate' end
local outcome = spend()
if type(outcome) ~= 'string' then return outcome end
if outcome ~= 'spent' then return outcome .. '|none' end
local now = tonumber(ARGV[1])
local live = ${luaString(prefix + 'gr-live')}
local pz = ${luaString(prefix + 'gr-p:')} .. ARGV[2]
local bz = KEYS[3]
redis.call('ZREMRANGEBYSCORE', live, '-inf', ARGV[1])
redis.call('ZREMRANGEBYSCORE', pz, '-inf', ARGV[1])
redis.call('ZREMRANGEBYSCORE', bz, '-inf', ARGV[1])
if redis.call('ZCARD', bz) >= ${bounds.maxGrantsPerPrincipal} or redis.call('ZCARD', live) >= ${bounds.maxGrants} then return 'spent|full' end
local id = string.sub(KEYS[2], ${Buffer.byteLength(prefix + 'gr:') + 1})
local bk = string.sub(bz, ${Buffer.byteLength(prefix + 'gr-b:') + 1})
local left = tonumber(ARGV[10]) - 1
redis.call('HSET', KEYS[2], 'id', id, 'principal', ARGV[2], 'aud', ARGV[3], 'tool', ARGV[4], 'scope', ARGV[5],
  'binding', ARGV[6], 'summary', ARGV[7], 'policy', ARGV[8], 'approver', ARGV[9], 'max', ARGV[10],
  'left', tostring(left), 'created', ARGV[11], 'exp', ARGV[12], 'revoked', '0', 'bk', bk)
local px = tonumber(ARGV[13])
redis.call('PEXPIRE', KEYS[2], px)
if left > 0 then
  redis.call('ZADD', live, ARGV[12], id)
  redis.call('ZADD', pz, ARGV[12], id)
  redis.call('ZADD', bz, ARGV[12], id)
  keep(live, px)
  keep(pz, px)
  keep(bz, px)
else
  ended(id, ARGV[12], now)
end
return 'spent|created'
`;
}

/**
 * The takeGrantUse script of one ledger. KEYS: grant (`…gr:ID`). ARGV: nowMs.
 * Answers `'unknown'`, `'expired'`, `'revoked'`, `'exhausted'` (the first that applies), or
 * `'taken|USES_LEFT|EXPIRES_AT_MS'` after taking one use; the last use takes the grant out of the
 * live zsets (`gr-live`, `gr-p:PRINCIPAL`, and `gr-b:BK` by its `bk` field) into `gr-ended`. A record that is not as the store writes it (`left`, `exp`, `max` not
 * whole decimal numbers, `left > max`, `revoked` neither `'0'` nor `'1'`, no principal) is an error,
 * never a use: the same record that `findGrants` and `revokeGrant` would not see as live.
 */
export function takeGrantUseScript(prefix: string, maxGrants: number): string {
  return `${endedGrantLua(prefix, maxGrants)}
local v = redis.call('HMGET', KEYS[1], 'left', 'exp', 'revoked', 'principal', 'max', 'bk')
if not v[1] and not v[2] then return 'unknown' end
local function whole(s) return s and string.match(s, '^%d+$') and tonumber(s) end
local left = whole(v[1])
local exp = whole(v[2])
local max = whole(v[5])
if not left or not exp or not max or left > max or not v[4] or (v[3] ~= '0' and v[3] ~= '1') then
  return redis.error_reply('ERR mcp-confirm: unexpected grant value')
end
local now = tonumber(ARGV[1])
if now >= exp then return 'expired' end
if v[3] == '1' then return 'revoked' end
if left <= 0 then return 'exhausted' end
left = left - 1
redis.call('HSET', KEYS[1], 'left', tostring(left))
if left == 0 then
  local id = string.sub(KEYS[1], ${Buffer.byteLength(prefix + 'gr:') + 1})
  redis.call('ZREM', ${luaString(prefix + 'gr-live')}, id)
  redis.call('ZREM', ${luaString(prefix + 'gr-p:')} .. v[4], id)
  if v[6] then redis.call('ZREM', ${luaString(prefix + 'gr-b:')} .. v[6], id) end
  ended(id, v[2], now)
end
return 'taken|' .. tostring(left) .. '|' .. v[2]
`;
}

/**
 * The revokeGrant script of one ledger. KEYS: grant (`…gr:ID`). ARGV: nowMs.
 * A live grant (not expired, a use left, not revoked) is marked revoked and moved from the live
 * zsets (`gr-b:BK` included) into `gr-ended`: `'revoked'`; anything else `'unknown'`, nothing changed.
 */
export function revokeGrantScript(prefix: string, maxGrants: number): string {
  return `${endedGrantLua(prefix, maxGrants)}
local v = redis.call('HMGET', KEYS[1], 'left', 'exp', 'revoked', 'principal', 'bk')
local left = tonumber(v[1])
local exp = tonumber(v[2])
local now = tonumber(ARGV[1])
if not left or not exp or not v[4] or v[3] ~= '0' or left <= 0 or now >= exp then return 'unknown' end
redis.call('HSET', KEYS[1], 'revoked', '1')
local id = string.sub(KEYS[1], ${Buffer.byteLength(prefix + 'gr:') + 1})
redis.call('ZREM', ${luaString(prefix + 'gr-live')}, id)
redis.call('ZREM', ${luaString(prefix + 'gr-p:')} .. v[4], id)
if v[5] then redis.call('ZREM', ${luaString(prefix + 'gr-b:')} .. v[5], id) end
ended(id, v[2], now)
return 'revoked'
`;
}

/**
 * The findGrants script of one ledger (reads only). ARGV: nowMs, then principal, audience, tool,
 * each `''` when not asked for, else `'='` followed by the value. Reads the principal's
 * `gr-p:PRINCIPAL` zset (or the namespace's `gr-live`) from just after `nowMs`, then each
 * grant's hash; answers the live ones that match as a JSON array of their hashes (`'[]'` for none).
 */
export function findGrantsScript(prefix: string): string {
  return `
local function wanted(arg)
  if arg == '' then return nil end
  return string.sub(arg, 2)
end
local now = tonumber(ARGV[1])
local principal = wanted(ARGV[2])
local aud = wanted(ARGV[3])
local tool = wanted(ARGV[4])
local z = ${luaString(prefix + 'gr-live')}
if principal then z = ${luaString(prefix + 'gr-p:')} .. principal end
local ids = redis.call('ZRANGEBYSCORE', z, '(' .. ARGV[1], '+inf')
local found = {}
for _, id in ipairs(ids) do
  local v = redis.call('HGETALL', ${luaString(prefix + 'gr:')} .. id)
  if #v > 0 then
    local o = {}
    for i = 1, #v, 2 do o[v[i]] = v[i + 1] end
    local left = tonumber(o.left)
    local exp = tonumber(o.exp)
    if left and exp and left > 0 and now < exp and o.revoked == '0'
      and (not principal or o.principal == principal) and (not aud or o.aud == aud) and (not tool or o.tool == tool) then
      found[#found + 1] = o
    end
  end
end
if #found == 0 then return '[]' end
return cjson.encode(found)
`;
}

/**
 * The spendPlanning script of one ledger: the ledger's spend script, byte for byte, as the body of
 * a local function, then (only when it spent) the plan's creation. KEYS: entry (`…jti:JTI`), plan
 * (`…pl:ID`), the principal and binding's zset (`…pl-b:BK`). ARGV: nowMs, principal, audience,
 * approver, createdAtMs, expiresAtMs, px, the number of slots N, binding, then N times: slot key,
 * tool, identity.
 *
 * Answers as {@link spendGrantingScript}, with the zsets `pl-b:BK` and `pl-live` bounded (and
 * `pl-p:PRINCIPAL` kept). Created: the `pl:ID` hash (the plan's fields, `bk` = `BK`, `left` = N,
 * and per slot I the fields `k:I`, `t:I`,
 * `i:I` and `x:KEY` = I, the last deleted when the slot is used), and per slot its id in the zset
 * `pl-s:KEY` (score: the plan's expiry).
 */
export function spendPlanningScript(
  prefix: string,
  maxTotal: number,
  bounds: { maxPlansPerPrincipal: number; maxPlans: number },
): string {
  return `
local function spend()
${spendScript(prefix, maxTotal)}
end
${KEEP_LUA}
if redis.call('EXISTS', KEYS[2]) == 1 then return 'duplicate' end
local outcome = spend()
if type(outcome) ~= 'string' then return outcome end
if outcome ~= 'spent' then return outcome .. '|none' end
local live = ${luaString(prefix + 'pl-live')}
local pz = ${luaString(prefix + 'pl-p:')} .. ARGV[2]
local bz = KEYS[3]
redis.call('ZREMRANGEBYSCORE', live, '-inf', ARGV[1])
redis.call('ZREMRANGEBYSCORE', pz, '-inf', ARGV[1])
redis.call('ZREMRANGEBYSCORE', bz, '-inf', ARGV[1])
if redis.call('ZCARD', bz) >= ${bounds.maxPlansPerPrincipal} or redis.call('ZCARD', live) >= ${bounds.maxPlans} then return 'spent|full' end
local id = string.sub(KEYS[2], ${Buffer.byteLength(prefix + 'pl:') + 1})
local bk = string.sub(bz, ${Buffer.byteLength(prefix + 'pl-b:') + 1})
local n = tonumber(ARGV[8])
local px = tonumber(ARGV[7])
redis.call('HSET', KEYS[2], 'id', id, 'principal', ARGV[2], 'aud', ARGV[3], 'approver', ARGV[4], 'created', ARGV[5],
  'exp', ARGV[6], 'slots', ARGV[8], 'left', ARGV[8], 'binding', ARGV[9], 'bk', bk)
for i = 0, n - 1 do
  local b = 10 + 3 * i
  redis.call('HSET', KEYS[2], 'k:' .. i, ARGV[b], 't:' .. i, ARGV[b + 1], 'i:' .. i, ARGV[b + 2], 'x:' .. ARGV[b], tostring(i))
  local sk = ${luaString(prefix + 'pl-s:')} .. ARGV[b]
  redis.call('ZADD', sk, ARGV[6], id)
  keep(sk, px)
end
redis.call('PEXPIRE', KEYS[2], px)
redis.call('ZADD', live, ARGV[6], id)
redis.call('ZADD', pz, ARGV[6], id)
redis.call('ZADD', bz, ARGV[6], id)
keep(live, px)
keep(pz, px)
keep(bz, px)
return 'spent|created'
`;
}

/**
 * The takePlanSlot script of one ledger. KEYS: the slot key's zset (`…pl-s:KEY`). ARGV: nowMs.
 * Removes the expired members, then takes the first (the plan expiring first; of those expiring
 * together, the lowest id): out of the zset, its `x:KEY` field deleted, `left` decremented (the
 * plan deleted, and out of `pl-live`, `pl-p:PRINCIPAL` and `pl-b:BK`, at 0). A member whose plan no longer
 * holds the slot is dropped and the next one tried. Answers `'none'`, or
 * `'taken|PLAN_ID|INDEX|SLOTS_LEFT|EXPIRES_AT_MS|IDENTITY'`.
 */
export function takePlanSlotScript(prefix: string): string {
  return `
local key = string.sub(KEYS[1], ${Buffer.byteLength(prefix + 'pl-s:') + 1})
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
while true do
  local first = redis.call('ZRANGE', KEYS[1], 0, 0)
  local id = first[1]
  if not id then return 'none' end
  redis.call('ZREM', KEYS[1], id)
  local pk = ${luaString(prefix + 'pl:')} .. id
  local v = redis.call('HMGET', pk, 'x:' .. key, 'exp', 'principal', 'bk')
  local exp = tonumber(v[2])
  if v[1] and exp and v[3] and now < exp then
    redis.call('HDEL', pk, 'x:' .. key)
    local left = redis.call('HINCRBY', pk, 'left', -1)
    local identity = redis.call('HGET', pk, 'i:' .. v[1]) or ''
    if left <= 0 then
      redis.call('DEL', pk)
      redis.call('ZREM', ${luaString(prefix + 'pl-live')}, id)
      redis.call('ZREM', ${luaString(prefix + 'pl-p:')} .. v[3], id)
      if v[4] then redis.call('ZREM', ${luaString(prefix + 'pl-b:')} .. v[4], id) end
    end
    return 'taken|' .. id .. '|' .. v[1] .. '|' .. tostring(left) .. '|' .. v[2] .. '|' .. identity
  end
end
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
 * Open an approval that needs several approvers (a quorum): as {@link APPROVAL_OPEN_SCRIPT}, with
 * its size in `req`, in the same step. KEYS: ap:ID, apj:JTI. ARGV: id, jti, principal, view,
 * expiresAtMs, px, approvalsRequired.
 */
export const APPROVAL_OPEN_QUORUM_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return 'duplicate' end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'jti', ARGV[2], 'principal', ARGV[3], 'view', ARGV[4], 'exp', ARGV[5],
  'status', 'pending', 'dec', '0', 'approver', '', 'cred', '', 'req', ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[6])
return 'opened'
`;

/**
 * Count one approver's approval (the rule of \`applyVote\` in approvalStore.ts). KEYS: ap:ID.
 * ARGV: approver, credentialId, nowMs, scope ('' for none). The list of counted approvals is the
 * hash field \`votes\` (JSON text); the count reaching \`req\` (1 when absent) approves.
 */
export const APPROVAL_COUNT_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'status', 'exp', 'req', 'votes')
if not v[1] then return 'unknown' end
if tonumber(ARGV[3]) >= tonumber(v[2]) then return 'expired' end
if v[1] ~= 'pending' then return 'already-decided' end
local votes = {}
if v[4] and v[4] ~= '' then votes = cjson.decode(v[4]) end
for _, a in ipairs(votes) do
  if a.approver == ARGV[1] or a.credentialId == ARGV[2] then return 'already-counted' end
end
local vote = { approver = ARGV[1], credentialId = ARGV[2], atMs = tonumber(ARGV[3]) }
if ARGV[4] ~= '' then vote.scope = ARGV[4] end
votes[#votes + 1] = vote
local parts = {}
for i, a in ipairs(votes) do
  local p = '{"approver":' .. cjson.encode(a.approver) .. ',"credentialId":' .. cjson.encode(a.credentialId) ..
    ',"atMs":' .. string.format('%.0f', a.atMs)
  if a.scope then p = p .. ',"scope":' .. cjson.encode(a.scope) end
  parts[i] = p .. '}'
end
local text = '[' .. table.concat(parts, ',') .. ']'
local req = tonumber(v[3] or '1') or 1
if #votes < req then
  redis.call('HSET', KEYS[1], 'votes', text)
  return 'counted'
end
local names, creds, all, any = {}, {}, true, false
for i, a in ipairs(votes) do
  names[i] = a.approver
  creds[i] = a.credentialId
  if a.scope ~= 'grant' then all = false end
  if a.scope then any = true end
end
redis.call('HSET', KEYS[1], 'votes', text, 'status', 'approved', 'approver', table.concat(names, ', '),
  'cred', table.concat(creds, ','), 'dec', ARGV[3])
if all then redis.call('HSET', KEYS[1], 'scope', 'grant') elseif any then redis.call('HSET', KEYS[1], 'scope', 'call') end
return 'approved'
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

/** Decide an approval once. KEYS: ap:ID. ARGV: status, approver, credentialId, nowMs, scope ('' for none). */
export const APPROVAL_DECIDE_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'status', 'exp', 'req')
if not v[1] then return 'unknown' end
if tonumber(ARGV[4]) >= tonumber(v[2]) then return 'expired' end
if v[1] ~= 'pending' then return 'already-decided' end
if ARGV[1] == 'approved' and (tonumber(v[3] or '1') or 1) > 1 then return 'already-decided' end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'approver', ARGV[2], 'cred', ARGV[3], 'dec', ARGV[4])
if ARGV[5] ~= nil and ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'scope', ARGV[5]) end
return 'decided'
`;

/**
 * Attach a grant id to an approved approval once, keeping it (and its jti index) until the later
 * of its expiry and the grant's. KEYS: ap:ID. ARGV: grantId, untilMs, nowMs, px (from nowMs to the
 * new expiry, with the skew margin), the apj: prefix.
 */
export const APPROVAL_ATTACH_GRANT_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'status', 'exp', 'grant', 'jti')
if not v[1] then return 'no' end
if tonumber(ARGV[3]) >= tonumber(v[2]) then return 'no' end
if v[1] ~= 'approved' or (v[3] and v[3] ~= '') then return 'no' end
local exp = math.max(tonumber(v[2]), tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'grant', ARGV[1], 'exp', string.format('%.0f', exp))
if exp > tonumber(v[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('PEXPIRE', ARGV[5] .. v[4], ARGV[4])
end
return 'attached'
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
export const APPROVAL_OPEN_QUORUM_SHA = sha1(APPROVAL_OPEN_QUORUM_SCRIPT);
export const APPROVAL_COUNT_SHA = sha1(APPROVAL_COUNT_SCRIPT);
export const APPROVAL_ATTACH_GRANT_SHA = sha1(APPROVAL_ATTACH_GRANT_SCRIPT);
export const CHALLENGE_PUT_SHA = sha1(CHALLENGE_PUT_SCRIPT);
export const CHALLENGE_TAKE_SHA = sha1(CHALLENGE_TAKE_SCRIPT);
export const COUNTER_SHA = sha1(COUNTER_SCRIPT);
