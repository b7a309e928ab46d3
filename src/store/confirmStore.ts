/**
 * The one store interface of mcp-confirm: what every store (memory, SQLite, Redis) implements
 * and what `createConfirmation({ store })`, `PasskeyApproval.start({ store })` and
 * `AuditLog.open({ heads })` take. New kinds of record are added here, as methods of
 * {@link ConfirmStore} and names in {@link CONFIRM_STORE_METHODS}, with their contract suite in
 * test/store/.
 *
 * @module
 */
import { APPROVAL_STORE_METHODS, type ApprovalStore } from './approvalStore.js';
import { AUDIT_HEAD_STORE_METHODS, type AuditHeadStore } from './auditHeads.js';
import { GRANT_STORE_METHODS, type GrantStore } from './grantStore.js';
import { LEDGER_METHODS, type Ledger } from './ledger.js';
import { LINK_STORE_METHODS, type LinkStore } from './linkStore.js';

/**
 * A store of confirmations: the {@link Ledger} of `jti`s, the {@link ApprovalStore} of passkey
 * approvals, challenges and signature counters, the {@link AuditHeadStore} of audit trail heads,
 * the {@link GrantStore} of grants and plans (created with the spend of the confirmation that
 * approved them), and the {@link LinkStore} of link approvals (clients that cannot elicit), kept together so that one shared store serves every replica.
 */
export interface ConfirmStore extends Ledger, ApprovalStore, AuditHeadStore, GrantStore, LinkStore {}

/** Every method of {@link ConfirmStore} besides `close`, once: what a wrapper forwards. */
export const CONFIRM_STORE_METHODS = [
  ...LEDGER_METHODS,
  ...APPROVAL_STORE_METHODS,
  ...AUDIT_HEAD_STORE_METHODS,
  ...GRANT_STORE_METHODS,
  ...LINK_STORE_METHODS,
] as const;

/**
 * The name of one method of {@link ConfirmStore} (besides `close`).
 *
 * @useDeclaredType
 */
export type ConfirmStoreMethod = (typeof CONFIRM_STORE_METHODS)[number];

/** The method names of `T` (its function-valued keys). */
type MethodsOf<T> = { [K in keyof T]-?: T[K] extends ((...args: never[]) => unknown) | undefined ? K : never }[keyof T];
// A compile-time check that the list names every method of the interface: adding a method to
// ConfirmStore without adding it to CONFIRM_STORE_METHODS fails the build here.
const LIST_IS_COMPLETE: Exclude<MethodsOf<ConfirmStore>, ConfirmStoreMethod | 'close'> extends never ? true : never =
  true;
void LIST_IS_COMPLETE;

/** Whether a value has every method of {@link ConfirmStore} (and its `kind` and `shared`). */
export function isConfirmStore(value: unknown): value is ConfirmStore {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v['kind'] === 'string' &&
    typeof v['shared'] === 'boolean' &&
    CONFIRM_STORE_METHODS.every((m) => typeof v[m] === 'function')
  );
}

/**
 * Wraps a store: every method named by {@link ConfirmStoreMethod} calls `around(method, run)`, where
 * `run()` calls the store's method with the caller's arguments; `kind`, `shared` and `close` are
 * the store's. Behaviour is the store's as long as `around` returns what `run()` does.
 *
 * @param store - the store to wrap.
 * @param around - called for each call, e.g. to time it; must return (or rethrow) `run()`'s outcome.
 * @returns a new {@link ConfirmStore} object.
 */
export function wrapStore(
  store: ConfirmStore,
  around: <T>(method: ConfirmStoreMethod, run: () => Promise<T>) => Promise<T>,
): ConfirmStore {
  const wrapped: Record<string, unknown> = { kind: store.kind, shared: store.shared };
  for (const method of CONFIRM_STORE_METHODS) {
    const f = store[method] as (...args: unknown[]) => Promise<unknown>;
    wrapped[method] = (...args: unknown[]) => around(method, () => f.apply(store, args));
  }
  if (store.close) wrapped['close'] = () => store.close!();
  return wrapped as unknown as ConfirmStore;
}
