// Builds airlock as one executable file for this machine's platform: a Node.js single-executable
// application (https://nodejs.org/api/single-executable-applications.html) of this Node.js binary,
// carrying the package as npm installs it without dev and optional dependencies (so no embedded
// PostgreSQL sandbox). Usage: node scripts/executable/build.mjs [OUT_DIR] (default: build/executable).
// Writes OUT_DIR/airlock-<platform>-<arch> and its .sha256.
import {execFileSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import {
  chmodSync,
  copyFileSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  mkdirSync,
} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {gzipSync} from 'node:zlib'

const root = path.resolve(import.meta.dirname, '..', '..')
const out = path.resolve(process.argv[2] ?? path.join(root, 'build', 'executable'))
const work = mkdtempSync(path.join(tmpdir(), 'airlock-executable-'))
const run = (command, args, options = {}) =>
  execFileSync(command, args, {stdio: ['ignore', 'pipe', 'inherit'], ...options})

try {
  // The package as published (npm pack runs prepack: the build), installed the small way into a
  // directory that is a package of its own, so that npm can describe what it holds (npm sbom).
  const {version} = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
  const packed = run('npm', ['pack', '--loglevel=warn', '--pack-destination', work], {cwd: root})
  const tarballName = packed.toString().trim().split('\n').at(-1)
  const tarball = path.join(work, tarballName)
  const app = path.join(work, 'airlock')
  mkdirSync(app)
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({name: 'airlock', version, private: true}))
  run('npm', ['install', '--prefix', app, '--omit=dev', '--omit=optional', '--no-audit', '--no-fund', tarball])
  const sbom = run('npm', ['sbom', '--sbom-format=cyclonedx', '--omit=dev', '--omit=optional'], {cwd: app})

  // Regular files only: node_modules/.bin holds links the launcher does not need.
  const files = []
  const walk = (dir) => {
    for (const name of readdirSync(dir).sort()) {
      const full = path.join(dir, name)
      const stat = lstatSync(full)
      if (stat.isDirectory()) walk(full)
      else if (stat.isFile()) files.push([path.relative(app, full), stat.size, stat.mode & 0o777])
    }
  }
  walk(path.join(app, 'node_modules'))
  const index = Buffer.from(JSON.stringify(files.map(([file, size, mode]) => [file, size, mode])))
  const length = Buffer.alloc(4)
  length.writeUInt32BE(index.length)
  const payload = gzipSync(
    Buffer.concat([length, index, ...files.map(([file]) => readFileSync(path.join(app, file)))]),
    {level: 9},
  )
  writeFileSync(path.join(work, 'payload.gz'), payload)

  // One cache directory per build: a new executable never runs an older one's files.
  const build = `${version}-${createHash('sha256').update(payload).digest('hex').slice(0, 12)}`
  writeFileSync(path.join(work, 'build.txt'), build)
  writeFileSync(
    path.join(work, 'sea-config.json'),
    JSON.stringify({
      main: path.join(import.meta.dirname, 'launcher.cjs'),
      output: path.join(work, 'sea-prep.blob'),
      disableExperimentalSEAWarning: true,
      assets: {payload: path.join(work, 'payload.gz'), build: path.join(work, 'build.txt')},
    }),
  )
  run(process.execPath, ['--experimental-sea-config', path.join(work, 'sea-config.json')])

  mkdirSync(out, {recursive: true})
  const name = `airlock-${process.platform}-${process.arch}`
  const binary = path.join(out, name)
  rmSync(binary, {force: true})
  copyFileSync(process.execPath, binary)
  chmodSync(binary, 0o755)
  // postject warns about ELF note sections it leaves alone on every Linux build: shown only on failure.
  run(
    path.join(root, 'node_modules', '.bin', 'postject'),
    [
      binary,
      'NODE_SEA_BLOB',
      path.join(work, 'sea-prep.blob'),
      '--sentinel-fuse',
      'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2',
    ],
    {stdio: 'pipe'},
  )
  // Beside it: the tarball it was built from, a checksum file for each, and the software bill of
  // materials of the packages both carry (CycloneDX; the executable adds the Node.js binary itself).
  copyFileSync(tarball, path.join(out, tarballName))
  for (const file of [name, tarballName]) {
    const sum = createHash('sha256')
      .update(readFileSync(path.join(out, file)))
      .digest('hex')
    writeFileSync(path.join(out, `${file}.sha256`), `${sum}  ${file}\n`)
  }
  writeFileSync(path.join(out, `airflow-airlock-${version}.cdx.json`), sbom)
  const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`
  console.log(
    `${binary}: ${mb(statSync(binary).size)} (Node.js ${process.version}; the package: ${files.length} files, ${mb(payload.length)} compressed); build ${build}`,
  )
} finally {
  rmSync(work, {recursive: true, force: true})
}
