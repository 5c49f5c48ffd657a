// `platform`: the command-line client of the Platform Management API, on the generated client.
// The compile cache keeps each module's compiled (and type-stripped) code between runs, which halves the start-up
// time of a command; it must be on before the program's modules load, hence the dynamic import.
import { enableCompileCache } from 'node:module';

enableCompileCache();
const { run } = await import('./program.ts');
const { processIo } = await import('./io.ts');
const { EXIT_BROKEN_PIPE } = await import('./wait.ts');
// The reader of the output went away (`| head`): stop there, as a Unix tool that gets SIGPIPE does, without a trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(EXIT_BROKEN_PIPE);
});
const io = processIo();
await run(process.argv, io);
process.exitCode = io.exitCode;
