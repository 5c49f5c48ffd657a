// What commands read from files: request bodies in YAML or JSON (YAML parses both), so a product kept in git can
// be applied, and secrets.
import { readFileSync } from 'node:fs';
import { text as readAll } from 'node:stream/consumers';
import { UsageError } from './context.ts';
import type { Io } from './io.ts';

/** A file's text, or standard input's for `-`. */
async function read(io: Io, path: string): Promise<string> {
  return path === '-' ? readAll(io.stdin) : readFileSync(path, 'utf8');
}

export async function readDocument(io: Io, path: string): Promise<unknown> {
  let text: string;
  try {
    text = await read(io, path);
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as Error).message}`);
  }
  const { parse } = await import('yaml'); // only commands that read files pay for loading it
  try {
    return parse(text);
  } catch (error) {
    throw new UsageError(`${path} is neither YAML nor JSON: ${(error as Error).message}`);
  }
}

/**
 * A secret (an API token) from a file, or from standard input for `-`: never from a flag's value, which would
 * stay in the shell's history and the process list. One trailing newline (as `echo` and editors add) is dropped.
 */
export async function readSecret(io: Io, path: string, flag: string): Promise<string> {
  let text: string;
  try {
    text = await read(io, path);
  } catch (error) {
    throw new UsageError(`${flag}: cannot read ${path === '-' ? 'standard input' : path}: ${(error as Error).message}`);
  }
  const secret = text.replace(/\r?\n$/, '');
  if (secret === '') throw new UsageError(`${flag}: ${path === '-' ? 'standard input' : path} is empty`);
  return secret;
}
