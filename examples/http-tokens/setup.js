// Creates what the server and the client need, in this folder:
// - signing-key.json: a private RS256 key, as your authorization server would hold it (mode 0600);
// - jwks.json: its public half, the JWK set the server checks tokens against (--auth-jwks);
// - files/report.txt: a file for the client to delete (the server's --root is files/).
import { mkdirSync, writeFileSync } from 'node:fs';
import { exportJWK, generateKeyPair } from 'jose';

const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
const kid = 'example-key-1';
writeFileSync('signing-key.json', JSON.stringify({ ...(await exportJWK(privateKey)), kid, alg: 'RS256' }), {
  mode: 0o600,
});
writeFileSync(
  'jwks.json',
  JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] }),
);
mkdirSync('files', { recursive: true });
writeFileSync('files/report.txt', 'quarterly numbers\n');
console.log('wrote signing-key.json, jwks.json and files/report.txt');
