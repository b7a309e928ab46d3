/**
 * The HTML of the approval and enrolment pages: the layout every page shares, escaping, and the
 * static script and style it links to (`/assets/page.js`, `/assets/page.css`; files, so the
 * Content-Security-Policy the listener sends needs no inline script or style).
 *
 * @module
 */
import { PAGE_CSS, PAGE_JS } from './assets.js';

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The static asset at `path` (`/assets/page.js`, `/assets/page.css`), or undefined. */
export function assetAt(path: string): { type: string; body: string } | undefined {
  if (path === '/assets/page.js') return { type: 'text/javascript; charset=utf-8', body: PAGE_JS };
  if (path === '/assets/page.css') return { type: 'text/css; charset=utf-8', body: PAGE_CSS };
  return undefined;
}

/** The surrounding HTML of every page. `bodyAttrs` are trusted; `main` is already escaped. */
export function layout(title: string, bodyAttrs: string, main: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/assets/page.css">
<script src="/assets/page.js" defer></script>
</head>
<body ${bodyAttrs}>
<main>
${main}
</main>
</body>
</html>
`;
}
