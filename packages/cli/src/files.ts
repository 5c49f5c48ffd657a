// Request bodies read from files: YAML or JSON (YAML parses both), so a product kept in git can be applied.
import { readFileSync } from 'node:fs';
import { UsageError } from './context.ts';

export async function readDocument(path: string): Promise<unknown> {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
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
