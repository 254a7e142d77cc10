// Writes oclif.manifest.json in the package root: every command with its flags, args, summary and
// examples, as `oclif manifest` writes it, built by @oclif/core's own Plugin class (the oclif CLI
// package itself would be a heavy dev dependency for this one file).
//
// Why: without a manifest, oclif imports every command module (and so their import graphs) to
// learn the command list, even for `airlock --version`. With one, it reads this file and imports
// only the module of the command it runs; `--help` is built from the file alone.
//
// `npm run build` runs it after tsc, so the manifest matches dist/: oclif trusts any manifest whose
// version matches package.json, and a stale one would hide a new command or flag. It is build
// output (gitignored) and ships in the npm package ("files").
//
//     node scripts/oclif-manifest.mjs           # write it
//     node scripts/oclif-manifest.mjs --check   # exit 1 unless the file matches dist/ now
import {readFileSync, rmSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {Plugin} from '@oclif/core'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const file = join(root, 'oclif.manifest.json')
const check = process.argv.includes('--check')

// Written anew, the old manifest goes first: if a command fails to load below, none is left behind.
if (!check) rmSync(file, {force: true})

// Under NODE_ENV=development or test, oclif maps dist/commands back to the TypeScript sources; the
// manifest describes the compiled modules the package runs.
delete process.env.NODE_ENV

// The options `oclif manifest` (oclif 4) passes: the root plugin, never an existing manifest, fail
// on any command that does not load, and leave out defaults marked noCacheDefault.
const plugin = new Plugin({
  root,
  type: 'core',
  isRoot: true,
  ignoreManifest: true,
  errorOnManifestCreate: true,
  respectNoCacheDefault: true,
})
await plugin.load()
const count = Object.keys(plugin.manifest.commands).length
if (count === 0) throw new Error(`no command found in ${plugin.pjson.oclif.commands}: run tsc first`)
// Sorted by id: oclif lists commands in the order its directory walk finds them, which varies
// between runs (subfolders, such as lineage/, come early or late), and --check compares text.
const manifest = {
  ...plugin.manifest,
  commands: Object.fromEntries(
    Object.entries(plugin.manifest.commands).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  ),
}
const text = JSON.stringify(manifest, null, 2)

if (check) {
  let written = ''
  try {
    written = readFileSync(file, 'utf8')
  } catch {
    // missing: reported below as not matching
  }
  if (written !== text) {
    console.error(`${file} does not match the compiled commands in dist/: run npm run build.`)
    process.exit(1)
  }
  console.log(`${file} matches dist/ (${count} commands)`)
} else {
  writeFileSync(file, text)
  console.log(`wrote ${file} (${count} commands)`)
}
