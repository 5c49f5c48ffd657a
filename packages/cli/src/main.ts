// `platform`: the command-line client of the Platform Management API, on the generated client.
// The compile cache keeps each module's compiled (and type-stripped) code between runs, which halves the start-up
// time of a command; it must be on before the program's modules load, hence the dynamic import.
import { enableCompileCache } from 'node:module';

enableCompileCache();
const { run } = await import('./program.ts');
const { processIo } = await import('./io.ts');
const io = processIo();
await run(process.argv, io);
process.exitCode = io.exitCode;
