/** What the proxy's argument check removes from a schema before compiling it (the rest: test/e2e/proxyRealServers.test.ts). */
import { describe, expect, it } from 'vitest';
import { withoutUpstreamRegexes } from '../../src/proxy/argumentSchema.js';

describe('withoutUpstreamRegexes', () => {
  it('removes pattern wherever a schema stands (properties, items, allOf, $defs, propertyNames), and patternProperties with its additionalProperties', () => {
    const schema = {
      type: 'object',
      properties: { a: { type: 'string', pattern: '^(a+)+$' } },
      items: [{ pattern: 'x' }],
      allOf: [{ properties: { b: { pattern: 'y', maxLength: 3 } } }],
      $defs: { c: { pattern: 'z' } },
      propertyNames: { pattern: '^[a-z]+$' },
      patternProperties: { '^x-': { type: 'string' } },
      additionalProperties: false,
      unevaluatedProperties: false,
    };
    expect(withoutUpstreamRegexes(schema)).toEqual({
      type: 'object',
      properties: { a: { type: 'string' } },
      items: [{}],
      allOf: [{ properties: { b: { maxLength: 3 } } }],
      $defs: { c: {} },
      propertyNames: {},
    });
    // The schema given is not changed (a copy is).
    expect(schema.properties.a.pattern).toBe('^(a+)+$');
  });

  it('control: a property named pattern, and values (const, enum, default) holding a pattern key, are kept', () => {
    const schema = {
      type: 'object',
      properties: { pattern: { type: 'string' }, p: { const: { pattern: 1 }, default: { pattern: 2 }, enum: [{ pattern: 3 }] } },
      required: ['pattern'],
      additionalProperties: false,
    };
    expect(withoutUpstreamRegexes(schema)).toEqual(schema);
  });
});
