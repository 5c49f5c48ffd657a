// The manifest that `pnpm pack` / `pnpm publish` put in a package's tarball: what a consumer installs needs no
// scripts (their files are not packed) and no devDependencies (workspace-only packages, the tests' libraries).
module.exports = {
  hooks: {
    beforePacking(pkg) {
      delete pkg.scripts;
      delete pkg.devDependencies;
      return pkg;
    },
  },
};
