/** What the proxy's argument check removes from a schema before compiling it, wherever it stands (the rest: test/e2e/proxyRealServers.test.ts). */
import { describe, expect, it } from 'vitest';
import { withoutUncheckedKeywords } from '../../src/proxy/argumentSchema.js';

describe('withoutUncheckedKeywords', () => {
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
    expect(withoutUncheckedKeywords(schema)).toEqual({
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
      properties: {
        pattern: { type: 'string' },
        p: { const: { pattern: 1 }, default: { pattern: 2 }, enum: [{ pattern: 3 }] },
      },
      required: ['pattern'],
      additionalProperties: false,
    };
    expect(withoutUncheckedKeywords(schema)).toEqual(schema);
  });

  it('removes pattern and uniqueItems: true from objects a $ref can reach anywhere (unknown keywords, inside const and enum, under $id), dropping the const or enum that changed', () => {
    const schema = {
      type: 'object',
      properties: {
        w: { $ref: '#/x-hidden/p' },
        c: { $ref: '#/properties/z/const' },
        l: { type: 'array', uniqueItems: true, maxItems: 3 },
      },
      'x-hidden': { p: { type: 'string', pattern: '^(a+)+$', maxLength: 50 } },
      z: { const: { type: 'string', pattern: '^(a+)+$' } },
      e: { enum: [{ pattern: '^(a+)+$' }, 'k'] },
      $defs: { d: { $id: 'urn:x', $anchor: 'd', pattern: '^(a+)+$' } },
      required: ['w'],
    };
    expect(withoutUncheckedKeywords(schema)).toEqual({
      type: 'object',
      properties: {
        w: { $ref: '#/x-hidden/p' },
        c: { $ref: '#/properties/z/const' },
        l: { type: 'array', maxItems: 3 },
      },
      'x-hidden': { p: { type: 'string', maxLength: 50 } },
      z: {},
      e: {},
      $defs: { d: { $id: 'urn:x', $anchor: 'd' } },
      required: ['w'],
    });
  });

  it('a key removed from a properties map (a property whose schema is the string at key pattern) takes additionalProperties and every unevaluatedProperties with it; only a changed schema under a property does not (control)', () => {
    expect(
      withoutUncheckedKeywords({
        properties: { pattern: '^(a+)+$', n: { type: 'integer' } },
        additionalProperties: false,
        allOf: [{ unevaluatedProperties: false }],
      }),
    ).toEqual({ properties: { n: { type: 'integer' } }, allOf: [{}] });
    expect(withoutUncheckedKeywords({ properties: { pattern: 'x' }, unevaluatedProperties: false })).toEqual({
      properties: {},
    });
    const kept = {
      properties: { a: { type: 'string', pattern: 'x' } },
      additionalProperties: false,
      unevaluatedProperties: false,
    };
    expect(withoutUncheckedKeywords(kept)).toEqual({
      properties: { a: { type: 'string' } },
      additionalProperties: false,
      unevaluatedProperties: false,
    });
  });

  it('control: uniqueItems: false, a non-string pattern and strings-only enums are kept', () => {
    const schema = {
      type: 'object',
      properties: { l: { uniqueItems: false }, m: { enum: ['pattern', 'uniqueItems'] } },
      x: { pattern: 5 },
    };
    expect(withoutUncheckedKeywords(schema)).toEqual(schema);
  });
});
