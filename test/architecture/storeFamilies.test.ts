import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {describe, expect, it} from 'vitest'

/**
 * The store is used by family (docs/architecture.md, "The store's families"): a feature names
 * the families it calls (`AirflowDatabase<TaskInstanceStore & EventStore>`), so the compiler
 * refuses a call into one it did not name. Only what opens the database holds the whole
 * `AirflowStore`: the CLI (commands/ and src/cli/) and the benchmark, which builds its own worlds.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const composers = ['commands', 'src/cli', 'src/bench']

function sources(dir: string): string[] {
  return fs.readdirSync(dir, {withFileTypes: true}).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return sources(full)
    return entry.name.endsWith('.ts') ? [full] : []
  })
}

const files = [...sources(path.join(root, 'src')), ...sources(path.join(root, 'commands'))].map((file) =>
  path.relative(root, file).split(path.sep).join('/'),
)

describe('store families', () => {
  it('no file outside the store and the places that open the database imports the whole AirflowStore', () => {
    const whole = files.filter((file) =>
      /from '[^']*\/airflowStore\.js'/.test(fs.readFileSync(path.join(root, file), 'utf8')),
    )
    expect(whole.length).toBeGreaterThan(0)
    const outside = whole.filter(
      (file) => !file.startsWith('src/store/') && !composers.some((folder) => file.startsWith(`${folder}/`)),
    )
    expect(outside).toEqual([])
  })

  it('AirflowStore is the sum of every family file', () => {
    const families = fs.readdirSync(path.join(root, 'src', 'store', 'families')).filter((f) => f.endsWith('.ts'))
    const composed = fs.readFileSync(path.join(root, 'src', 'store', 'airflowStore.ts'), 'utf8')
    for (const family of families) expect(composed).toContain(`'./families/${family.replace(/\.ts$/, '.js')}'`)
  })
})
