#!/usr/bin/env node
// The installed `platform` command: runs the TypeScript entry directly, on the workspace's Node 24 (the root
// `node` devDependency) that strips the types; the package declares no engines of its own, as pnpm would check
// them against the Node pnpm itself runs on (20.19 or later, the root's engines).
import '../src/main.ts';
