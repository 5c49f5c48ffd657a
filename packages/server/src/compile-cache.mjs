// Loaded ahead of the server's modules (`node --import`, package.json "start"; JavaScript, so that nothing needs
// compiling before it runs). Node then keeps the code it compiles in its on-disk compile cache, TypeScript with
// its types stripped included, and a later start of the same code takes it from there: it neither strips types
// again nor loads the type stripper, whose code and WebAssembly memory took about 20 MB of the server's resident
// memory for as long as it ran (docs/performance.md). The first start of new code fills the cache (written as
// the process exits); NODE_COMPILE_CACHE names its folder (default: the system's temporary folder), and
// NODE_DISABLE_COMPILE_CACHE=1 turns it off. Node before 22.1 has no compile cache and starts as it did.
import module from 'node:module';

module.enableCompileCache?.();
