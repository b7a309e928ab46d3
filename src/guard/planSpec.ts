/**
 * What `confirm_plan` announces (its name, description and input schema), apart from what it
 * does (`plans.ts`). Imports only zod and the bound on calls (`defaults.ts`), so a server can list the tool before
 * its confirmation layer is loaded (the command line's cold start).
 *
 * @module
 */
import { z } from 'zod';
import { MAX_PLAN_SLOTS } from '../defaults.js';

/** The name of the plans tool. */
export const PLAN_TOOL = 'confirm_plan';

/** The input of `confirm_plan`: `{calls: [{tool, arguments}]}`, 1 to {@link MAX_PLAN_SLOTS} calls. */
export const PlanInput = z.strictObject({
  calls: z
    .array(
      z.strictObject({
        tool: z.string().min(1).max(256).describe('The name of a tool this server confirms.'),
        arguments: z
          .record(z.string(), z.unknown())
          .optional()
          .describe('Its arguments, exactly as the call will send them.'),
      }),
    )
    .min(1)
    .max(MAX_PLAN_SLOTS)
    .describe('The calls to approve together, in the order they will be made.'),
});

/** The parsed input of `confirm_plan`. */
export type PlanArgs = z.infer<typeof PlanInput>;

/** The registration of `confirm_plan` (as `McpServer.registerTool` takes it). */
export const PLAN_TOOL_CONFIG = {
  title: 'Approve a plan of calls',
  description:
    "Propose several calls of tools that need a person's confirmation at once, so the person approves them with one question instead of one each. List every call (tool and exact arguments) in the order you will make them. Approving does nothing by itself: afterwards, make each listed call once, exactly as listed, and it runs without another question (it is still checked before it runs). Use this first whenever you plan more than one such call.",
  inputSchema: PlanInput,
  annotations: { destructiveHint: false, readOnlyHint: false, idempotentHint: false, openWorldHint: false },
};
