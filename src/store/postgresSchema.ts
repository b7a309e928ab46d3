/**
 * The tables of the PostgreSQL store (src/store/postgres.ts), version {@link POSTGRES_SCHEMA_VERSION},
 * all in one PostgreSQL schema (default `mcp_confirm`). Kept apart from the store so that the
 * schema a version creates is read in one place (and `store init` creates exactly this).
 *
 * Times are `double precision` milliseconds (the caller's clock, any finite number, as the other
 * stores keep them); counts and counters are `bigint`.
 *
 * @module
 */

/**
 * The schema version this code creates and knows. A store whose `meta` row names a higher one was
 * made by a later mcp-confirm: opening it is refused (`ERR_CONFIG_STORE_SCHEMA`).
 */
export const POSTGRES_SCHEMA_VERSION = 1;

/** The default PostgreSQL schema name of the store's tables. */
export const DEFAULT_POSTGRES_SCHEMA = 'mcp_confirm';

/** A schema name the store accepts: a lower-case SQL identifier that needs no quoting, 1 to 63 bytes. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The DDL of version 1, in schema `s` (already checked against {@link SCHEMA_NAME}). Idempotent
 * (`IF NOT EXISTS`, `CREATE OR REPLACE`), run in one transaction under the creation lock.
 */
export function schemaSql(s: string): string {
  return `
CREATE SCHEMA IF NOT EXISTS ${s};
CREATE TABLE IF NOT EXISTS ${s}.meta (
  key text PRIMARY KEY,
  value text NOT NULL
);
CREATE TABLE IF NOT EXISTS ${s}.ledger (
  jti text PRIMARY KEY,
  principal text NOT NULL,
  expires_at_ms double precision NOT NULL,
  spent boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS ledger_expiry ON ${s}.ledger (expires_at_ms);
CREATE INDEX IF NOT EXISTS ledger_tombstones ON ${s}.ledger (expires_at_ms) WHERE spent;
CREATE TABLE IF NOT EXISTS ${s}.ledger_counts (
  scope text NOT NULL CHECK (scope IN ('total', 'spent', 'principal')),
  name text NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (scope, name)
);
INSERT INTO ${s}.ledger_counts (scope, name, n) VALUES ('total', '', 0), ('spent', '', 0)
  ON CONFLICT (scope, name) DO NOTHING;
-- The counts follow the rows inside the statement that changes them, so they never drift. The
-- 'total' row is always locked before a 'principal' row (see postgres.ts, "Locks").
CREATE OR REPLACE FUNCTION ${s}.ledger_counted() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NOT NEW.spent THEN
      UPDATE ${s}.ledger_counts SET n = n + 1 WHERE scope = 'total' AND name = '';
      INSERT INTO ${s}.ledger_counts (scope, name, n) VALUES ('principal', NEW.principal, 1)
        ON CONFLICT (scope, name) DO UPDATE SET n = ${s}.ledger_counts.n + 1;
    END IF;
  ELSIF TG_OP = 'UPDATE' THEN
    IF NOT OLD.spent AND NEW.spent THEN
      UPDATE ${s}.ledger_counts SET n = n - 1 WHERE scope = 'total' AND name = '';
      UPDATE ${s}.ledger_counts SET n = n - 1 WHERE scope = 'principal' AND name = OLD.principal;
      UPDATE ${s}.ledger_counts SET n = n + 1 WHERE scope = 'spent' AND name = '';
    END IF;
  ELSIF OLD.spent THEN
    UPDATE ${s}.ledger_counts SET n = n - 1 WHERE scope = 'spent' AND name = '';
  ELSE
    UPDATE ${s}.ledger_counts SET n = n - 1 WHERE scope = 'total' AND name = '';
    UPDATE ${s}.ledger_counts SET n = n - 1 WHERE scope = 'principal' AND name = OLD.principal;
  END IF;
  RETURN NULL;
END
$body$;
CREATE OR REPLACE TRIGGER ledger_counted AFTER INSERT OR UPDATE OF spent OR DELETE ON ${s}.ledger
  FOR EACH ROW EXECUTE FUNCTION ${s}.ledger_counted();
CREATE TABLE IF NOT EXISTS ${s}.audit_heads (
  path text PRIMARY KEY,
  trail text NOT NULL,
  seq bigint NOT NULL CHECK (seq >= 1),
  mac text NOT NULL
);
CREATE TABLE IF NOT EXISTS ${s}.approvals (
  id text PRIMARY KEY,
  jti text NOT NULL UNIQUE,
  principal text NOT NULL,
  view text NOT NULL,
  expires_at_ms double precision NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'declined')),
  decided_at_ms double precision NOT NULL DEFAULT 0,
  approver text NOT NULL DEFAULT '',
  credential_id text NOT NULL DEFAULT '',
  scope text,
  grant_id text,
  approvals_required integer,
  approvals text
);
CREATE INDEX IF NOT EXISTS approvals_expiry ON ${s}.approvals (expires_at_ms);
CREATE TABLE IF NOT EXISTS ${s}.challenges (
  challenge text PRIMARY KEY,
  approval_id text NOT NULL,
  expires_at_ms double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS challenges_expiry ON ${s}.challenges (expires_at_ms);
CREATE INDEX IF NOT EXISTS challenges_approval ON ${s}.challenges (approval_id, expires_at_ms);
CREATE TABLE IF NOT EXISTS ${s}.counters (
  credential_id text PRIMARY KEY,
  counter bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS ${s}.approval_links (
  link_key text PRIMARY KEY,
  approval_id text NOT NULL,
  principal text NOT NULL,
  kept text NOT NULL,
  expires_at_ms double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS approval_links_principal ON ${s}.approval_links (principal, expires_at_ms);
CREATE INDEX IF NOT EXISTS approval_links_expiry ON ${s}.approval_links (expires_at_ms);
CREATE TABLE IF NOT EXISTS ${s}.grants (
  id text PRIMARY KEY,
  audience text NOT NULL,
  principal text NOT NULL,
  tool text NOT NULL,
  scope text NOT NULL,
  binding text NOT NULL,
  summary text NOT NULL,
  policy_digest text NOT NULL,
  approver text NOT NULL,
  max_uses integer NOT NULL,
  uses_left integer NOT NULL CHECK (uses_left >= 0),
  created_at_ms double precision NOT NULL,
  expires_at_ms double precision NOT NULL,
  revoked boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS grants_expiry ON ${s}.grants (expires_at_ms);
-- The bound on live grants counts per principal and binding (postgres.ts, spendGranting).
CREATE INDEX IF NOT EXISTS grants_live_bound ON ${s}.grants (principal, binding, expires_at_ms) WHERE uses_left > 0 AND NOT revoked;
CREATE INDEX IF NOT EXISTS grants_ended ON ${s}.grants (expires_at_ms) WHERE uses_left = 0 OR revoked;
CREATE TABLE IF NOT EXISTS ${s}.plans (
  id text PRIMARY KEY,
  audience text NOT NULL,
  principal text NOT NULL,
  binding text NOT NULL,
  approver text NOT NULL,
  created_at_ms double precision NOT NULL,
  expires_at_ms double precision NOT NULL,
  slots integer NOT NULL,
  slots_left integer NOT NULL CHECK (slots_left >= 0)
);
-- The bound on live plans counts per principal and binding (postgres.ts, spendPlanning).
CREATE INDEX IF NOT EXISTS plans_bound ON ${s}.plans (principal, binding, expires_at_ms);
CREATE INDEX IF NOT EXISTS plans_expiry ON ${s}.plans (expires_at_ms);
CREATE TABLE IF NOT EXISTS ${s}.plan_slots (
  plan_id text NOT NULL,
  idx integer NOT NULL,
  slot_key text NOT NULL,
  tool text NOT NULL,
  identity text NOT NULL,
  expires_at_ms double precision NOT NULL,
  PRIMARY KEY (plan_id, idx)
);
CREATE INDEX IF NOT EXISTS plan_slots_key ON ${s}.plan_slots (slot_key, expires_at_ms);
CREATE INDEX IF NOT EXISTS plan_slots_expiry ON ${s}.plan_slots (expires_at_ms);
INSERT INTO ${s}.meta (key, value) VALUES ('schema_version', '${POSTGRES_SCHEMA_VERSION}')
  ON CONFLICT (key) DO NOTHING;
`;
}
