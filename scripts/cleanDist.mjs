// `npm pack` and `npm publish` (the prepack script) build dist/ from scratch: removes the old one
// first, so a module left over from an older build never ships.
import { rmSync } from 'node:fs';

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
