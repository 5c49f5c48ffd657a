#!/usr/bin/env node
// The installed `platform` command: runs the TypeScript entry directly (Node 24 strips the types).
import '../src/main.ts';
