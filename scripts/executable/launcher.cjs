// The single executable's own entry (a Node.js single-executable application): the installed
// package travels inside it as one compressed asset, is unpacked once per build into a cache
// directory, and is then run from there exactly as the npm install runs it (bin/run.js). Node's
// injected main script can load only built-in modules, and airlock's modules are ES modules that
// oclif imports by path: files on disk are what they need.
'use strict'
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const zlib = require('node:zlib')
const {createRequire} = require('node:module')
const sea = require('node:sea')

// A signal during the first run's unpacking is remembered, as bin/run.js remembers one during
// oclif's loading, and taken up by the command (exit 130) instead of ending the process by it.
const early = (signal) => {
  globalThis.airlockEarlySignal ??= signal
}
process.on('SIGINT', early)
process.on('SIGTERM', early)
globalThis.airlockLauncherSignals = () => {
  process.off('SIGINT', early)
  process.off('SIGTERM', early)
}

const build = sea.getAsset('build', 'utf8')
// What the sandbox's advice reads (src/sandbox/cluster.ts): this airlock is the single executable.
globalThis.airlockExecutable = build
const root =
  process.env.AIRLOCK_EXECUTABLE_CACHE ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'airlock', 'executable')
const dir = path.join(root, build)
if (!fs.existsSync(path.join(dir, '.complete'))) {
  try {
    unpack()
  } catch (error) {
    // Where the files cannot go (a read-only home, a full disk): what to set, never a stack.
    process.stderr.write(
      `airlock: cannot unpack its files into ${dir} (${error.code ?? error.message}): set AIRLOCK_EXECUTABLE_CACHE to a writable directory (or XDG_CACHE_HOME).\n`,
    )
    process.exit(2)
  }
}

// Loaded from disk, launch.cjs may import() the ES modules; the injected script may not.
createRequire(path.join(dir, 'launch.cjs'))('./launch.cjs')

/**
 * The payload (see build.mjs): a 4-byte index length, the index ([path, size, mode] per file),
 * then the files' bytes, gzip-compressed. Unpacked beside its final place and renamed into it,
 * so a second process starting at the same moment, or one killed half-way, never runs a partial
 * tree.
 */
function unpack() {
  const data = zlib.gunzipSync(Buffer.from(sea.getAsset('payload')))
  const indexLength = data.readUInt32BE(0)
  const index = JSON.parse(data.subarray(4, 4 + indexLength).toString('utf8'))
  const staging = `${dir}.${process.pid}.partial`
  fs.rmSync(staging, {recursive: true, force: true})
  let offset = 4 + indexLength
  for (const [file, size, mode] of index) {
    const target = path.join(staging, file)
    fs.mkdirSync(path.dirname(target), {recursive: true})
    fs.writeFileSync(target, data.subarray(offset, offset + size), {mode})
    offset += size
  }
  fs.writeFileSync(
    path.join(staging, 'launch.cjs'),
    "'use strict'\nrequire('node:url')\nmodule.exports = import(require('node:url').pathToFileURL(require('node:path').join(__dirname, 'node_modules', 'airflow-airlock', 'bin', 'run.js')).href)\n",
  )
  fs.writeFileSync(path.join(staging, '.complete'), `${build}\n`)
  try {
    fs.renameSync(staging, dir)
  } catch (error) {
    // Another process unpacked the same build first: its tree is whole; this one goes.
    fs.rmSync(staging, {recursive: true, force: true})
    if (!fs.existsSync(path.join(dir, '.complete'))) throw error
  }
}
