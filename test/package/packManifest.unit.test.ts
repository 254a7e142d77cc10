import {execFile} from 'node:child_process'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

/**
 * What npm packs as the package's package.json: the checkout's, without the scripts npm would run
 * at install (prepare builds dist/ in a checkout; the package ships it built). prepack strips it,
 * postpack puts the checkout's file back. Run here on a copy of the real package.json.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const script = path.join(root, 'scripts', 'pack-manifest.mjs')
const run = (dir: string, action: string) => promisify(execFile)(process.execPath, [script, action], {cwd: dir})
const installScripts = ['preinstall', 'install', 'postinstall', 'prepare']

let dir: string
let original: string
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-pack-'))
  original = await fs.readFile(path.join(root, 'package.json'), 'utf8')
  await fs.writeFile(path.join(dir, 'package.json'), original)
})
afterEach(async () => fs.rm(dir, {recursive: true, force: true}))

const manifest = async () =>
  JSON.parse(await fs.readFile(path.join(dir, 'package.json'), 'utf8')) as Record<string, unknown>

describe('scripts/pack-manifest.mjs', () => {
  it("npm's lifecycle runs it: prepack builds, then strips; postpack restores", () => {
    const {scripts} = JSON.parse(original) as {scripts: Record<string, string>}
    expect(scripts.prepack).toBe('npm run build && node scripts/pack-manifest.mjs strip')
    expect(scripts.postpack).toBe('node scripts/pack-manifest.mjs restore')
    // What it strips is what the checkout needs: npm ci builds dist/.
    expect(scripts.prepare).toBe('npm run build')
  })

  it('strip: no install script is left, everything else is as it was', async () => {
    await run(dir, 'strip')
    const stripped = await manifest()
    const scripts = stripped.scripts as Record<string, string>
    expect(installScripts.filter((name) => name in scripts)).toEqual([])
    const {scripts: before, ...rest} = JSON.parse(original) as {scripts: Record<string, string>}
    expect({...stripped, scripts: undefined}).toEqual({...rest, scripts: undefined})
    expect(scripts).toEqual(
      Object.fromEntries(Object.entries(before).filter(([name]) => !installScripts.includes(name))),
    )
  })

  it('restore puts the file back byte for byte, and a strip after a pack that died starts from the original', async () => {
    await run(dir, 'strip')
    // The pack died before postpack: strip again, then restore.
    await run(dir, 'strip')
    expect(await manifest()).not.toHaveProperty('scripts.prepare')
    await run(dir, 'restore')
    expect(await fs.readFile(path.join(dir, 'package.json'), 'utf8')).toBe(original)
    expect(await fs.readdir(dir)).toEqual(['package.json'])
    // Nothing to restore: nothing changes.
    await run(dir, 'restore')
    expect(await fs.readFile(path.join(dir, 'package.json'), 'utf8')).toBe(original)
  })
})
