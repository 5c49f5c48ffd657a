// Preloaded into the Prism processes that `startPrism` spawns (through NODE_OPTIONS=--import): Prism exits as
// soon as the process that started it is gone, even when that process was killed without running its own
// clean-up (a test worker killed by SIGKILL or a timeout), so no mock server outlives its owner.
// The owner is named by PRISM_OWNER_PID, because node_modules/.bin/prism runs Node through pnpm's `node`
// shim, a shell that stays between the owner and Prism.
const owner = Number(process.env.PRISM_OWNER_PID);
const parent = process.ppid;
function ownerAlive() {
  if (!owner) return true;
  try {
    process.kill(owner, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}
setInterval(() => {
  if (process.ppid !== parent || !ownerAlive()) process.exit(0);
}, 500).unref();
