/**
 * What the client of one request can do, read once in one place: which protocol era the request
 * belongs to and whether the client can answer a form or a URL-mode elicitation; the refusal
 * of a 2026-07-28 request whose client can answer neither (the spec's `-32021`); and whether a
 * request may be approved by link instead ({@link approvableByLink}).
 *
 * A 2026-07-28 request carries its protocol version and the client's capabilities in its own
 * `_meta` envelope (MCP 2026-07-28, basic/patterns/mrtr); a 2025-era request has no envelope, and
 * its client declared its capabilities once, in `initialize` (read from the server).
 *
 * @module
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  MissingRequiredClientCapabilityError,
  PROTOCOL_VERSION_META_KEY,
  type McpServer,
  type ProtocolEra,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { ConfirmNoElicitationError } from '../errors.js';
import { raiseForRequest } from './capabilityErrors.js';

/**
 * What the client of one request can do, as {@link clientCapabilities} reads it (named apart from
 * the SDK's `ClientCapabilities`, the declaration it is read from).
 */
export interface ClientCan {
  /**
   * `'modern'`: a 2026-07-28 request (its `_meta` envelope names a protocol version); `'legacy'`:
   * a 2025-era request (the SDK's legacy shim turns `input_required` into `elicitation/create`).
   */
  era: ProtocolEra;
  /**
   * The client declared form elicitation: `elicitation.form`, or an `elicitation` object without
   * `url` (an empty `elicitation: {}` implies form, as the SDK reads it).
   */
  form: boolean;
  /** The client declared URL-mode elicitation: `elicitation.url` is an object. */
  url: boolean;
}

/**
 * Reads what the client of this request can do. The capabilities come from the request's own
 * envelope on a 2026-07-28 request, else from what the client declared in `initialize`
 * (`server.server.getClientCapabilities()`; empty on a stateless 2025-era HTTP request, which
 * then can do neither).
 *
 * @param server - the server the request reached.
 * @param ctx - the request's context.
 * @returns the era and the two elicitation modes; never throws.
 */
export function clientCapabilities(server: McpServer, ctx: ServerContext): ClientCan {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const modern = envelope?.[PROTOCOL_VERSION_META_KEY] !== undefined;
  const era: ProtocolEra = modern ? 'modern' : 'legacy';
  // The envelope is the client's own JSON: anything may stand where an object is expected.
  const declared: { elicitation?: unknown } | null | undefined = modern
    ? (envelope?.[CLIENT_CAPABILITIES_META_KEY] as { elicitation?: unknown } | null | undefined)
    : server.server.getClientCapabilities();
  const elicitation = declared?.elicitation;
  if (elicitation === undefined || elicitation === null || typeof elicitation !== 'object')
    return { era, form: false, url: false };
  const { form, url } = elicitation as { form?: unknown; url?: unknown };
  return {
    era,
    form: form !== undefined || url === undefined,
    url: url !== undefined && url !== null && typeof url === 'object',
  };
}

/** What a 2026-07-28 client without elicitation is missing (`data.requiredCapabilities` of the `-32021`). */
export const REQUIRED_ELICITATION = { elicitation: { form: {} } } as const;

/**
 * The refusal of a 2026-07-28 request whose client cannot answer the question: the spec's JSON-RPC
 * `-32021` (MCP 2026-07-28, basic/patterns/mrtr: a server MUST NOT ask for input the client did not
 * declare) with `data.requiredCapabilities` ({@link REQUIRED_ELICITATION}), whose message is this
 * project's sentence with its code, the text a 2025-era client gets as an `isError` result
 * (`[ERR_CONFIRM_NO_ELICITATION] … nothing was done.`), not the SDK's generic "Cannot request input".
 * It is also recorded for the request ({@link raiseForRequest}), so a tool registered through
 * `McpServer.registerTool` answers it as the JSON-RPC error it is.
 *
 * @param ctx - the request's context (its abort signal keys the record).
 * @param refusal - the refusal whose code and sentence the message carries. Defaults to a
 *   {@link ConfirmNoElicitationError} without a hint.
 * @returns the error to throw.
 */
export function noElicitationError(
  ctx: ServerContext,
  refusal: ConfirmNoElicitationError = new ConfirmNoElicitationError(),
): MissingRequiredClientCapabilityError {
  const error = new MissingRequiredClientCapabilityError(
    { requiredCapabilities: REQUIRED_ELICITATION },
    `[${refusal.code}] ${refusal.message}`,
  );
  raiseForRequest(ctx.mcpReq.signal, error);
  return error;
}

/**
 * Whether a request may be approved by link (passkey approval for a client that cannot elicit):
 * over stdio (no HTTP request: the link is bound to the serving process), or over HTTP with an
 * authenticated caller (`ctx.http.authInfo`, bearer token auth). Over HTTP without it every caller
 * is the same principal, so anyone could retry a call another approved: the link flow is off and
 * such a client is refused as without it.
 *
 * @param ctx - the request's context.
 * @returns `true` over stdio or with an authenticated HTTP caller.
 */
export function approvableByLink(ctx: ServerContext): boolean {
  return ctx.http === undefined || ctx.http.authInfo !== undefined;
}
