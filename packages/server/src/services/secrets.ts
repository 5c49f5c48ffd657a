// Write-only secrets (cloud provider tokens, registry passwords) are sealed with AES-256-GCM under a key from
// configuration before they are stored; the database never sees them in the clear.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const VERSION = 1;

export interface SecretBox {
  seal(plaintext: string): Buffer;
  open(sealed: Buffer): string;
}

export function secretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('the secrets key must be 32 bytes');
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return Buffer.concat([Buffer.of(VERSION), iv, cipher.getAuthTag(), ciphertext]);
    },
    open(sealed) {
      if (sealed[0] !== VERSION) throw new Error('unknown secret format');
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 13));
      decipher.setAuthTag(sealed.subarray(13, 29));
      return Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()]).toString('utf8');
    },
  };
}

/**
 * The configured SECRETS_KEY, or — for a laptop without configuration — a key generated on first start and
 * kept (owner-only) in the data directory. Production sets SECRETS_KEY so every process shares one key.
 */
export async function loadSecretsKey(configured: Buffer | undefined, dataDir: string): Promise<Buffer> {
  if (configured) return configured;
  const file = join(dataDir, 'secrets.key');
  try {
    return Buffer.from((await readFile(file, 'utf8')).trim(), 'base64');
  } catch {
    const key = randomBytes(32);
    await mkdir(dataDir, { recursive: true });
    await writeFile(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' }).catch(async () => {
      // Another process wrote it first: use theirs.
    });
    return Buffer.from((await readFile(file, 'utf8')).trim(), 'base64');
  }
}
