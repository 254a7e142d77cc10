// The package.json that goes into the npm package: this one without its install-time lifecycle
// scripts. `prepare` builds dist/ on `npm ci` in a checkout, which is where it is wanted; in the
// package it would run nothing (the package ships dist/ built), but npm 11 still lists it at
// install as a script to approve ("install scripts not yet covered by allowScripts: airflow-airlock
// (prepare: npm run build)"), and a reviewer reads it as one.
//
// npm packs the package.json on disk, with no field to leave a script out, so `prepack` (after the
// build) strips the file and keeps the original beside it, and `postpack` puts it back:
//
//     node scripts/pack-manifest.mjs strip     # package.json without them; the original in package.json.unpacked
//     node scripts/pack-manifest.mjs restore   # package.json as it was, byte for byte
//
// A pack that died between the two leaves the copy: `restore` puts it back, and `strip` does so
// itself before stripping again. Both work on the current directory (npm runs them in the root).
import {copyFileSync, existsSync, readFileSync, rmSync, writeFileSync} from 'node:fs'

/** The scripts npm runs when it installs a package (and `prepare`, for a git or directory install). */
const installScripts = ['preinstall', 'install', 'postinstall', 'prepare']

const manifest = 'package.json'
const original = 'package.json.unpacked'

function restore() {
  if (!existsSync(original)) return
  copyFileSync(original, manifest)
  rmSync(original)
}

function strip() {
  restore()
  const text = readFileSync(manifest, 'utf8')
  const pkg = JSON.parse(text)
  for (const name of installScripts) delete pkg.scripts?.[name]
  writeFileSync(original, text)
  writeFileSync(manifest, `${JSON.stringify(pkg, null, 2)}\n`)
}

const action = process.argv[2]
if (action === 'strip') strip()
else if (action === 'restore') restore()
else {
  process.stderr.write('usage: node scripts/pack-manifest.mjs strip|restore\n')
  process.exit(2)
}
