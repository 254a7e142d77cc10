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

  it('a feature names only the families it calls: each family it imports, it calls a method of', () => {
    const familyDir = path.join(root, 'src', 'store', 'families')
    const methods = new Map<string, string[]>()
    for (const file of fs.readdirSync(familyDir).filter((f) => f.endsWith('.ts'))) {
      const text = fs.readFileSync(path.join(familyDir, file), 'utf8')
      for (const [, name, body] of text.matchAll(/export interface (\w+Store) \{([\s\S]*?)\n\}/g))
        methods.set(
          name!,
          [...body!.matchAll(/^ {2}(\w+)(?:<[^>]*>)?\(/gm)].map((m) => m[1]!),
        )
    }
    expect(methods.size).toBeGreaterThanOrEqual(10)
    for (const names of methods.values()) expect(names.length).toBeGreaterThan(0)

    // A feature is a folder of src/ (its writer's combined type may be named in one file and used
    // in another); the composers hold the whole store and are not asked.
    const features = new Map<string, string[]>()
    for (const file of files.filter((f) => f.startsWith('src/') && !f.startsWith('src/store/'))) {
      const folder = file.split('/')[1]!
      if (composers.includes(`src/${folder}`)) continue
      features.set(folder, [...(features.get(folder) ?? []), fs.readFileSync(path.join(root, file), 'utf8')])
    }
    // Used: a method of it is called here, or a folder this one imports from names it (the
    // feature hands its store on: audit selects through selection/, complete sends through lineage/).
    const named = new Map<string, Set<string>>()
    const importsFrom = new Map<string, Set<string>>()
    for (const [folder, texts] of features) {
      const text = texts.join('\n')
      named.set(
        folder,
        new Set(
          [...text.matchAll(/import type \{([^}]*)\} from '[^']*\/store\/families\/[^']*'/g)].flatMap((m) =>
            m[1]!.split(',').map((n) => n.trim()),
          ),
        ),
      )
      importsFrom.set(folder, new Set([...text.matchAll(/from '\.\.\/(\w+)\//g)].map((m) => m[1]!)))
    }
    const unused: string[] = []
    for (const [folder, texts] of features) {
      const text = texts.join('\n')
      const handedOn = new Set([...importsFrom.get(folder)!].flatMap((other) => [...(named.get(other) ?? [])]))
      for (const family of named.get(folder)!) {
        const own = methods.get(family)
        if (!own || handedOn.has(family)) continue
        if (!own.some((method) => new RegExp(`\\.${method}\\(`).test(text))) unused.push(`${folder}: ${family}`)
      }
    }
    expect(unused).toEqual([])
  })

  it('AirflowStore is the sum of every family file', () => {
    const families = fs.readdirSync(path.join(root, 'src', 'store', 'families')).filter((f) => f.endsWith('.ts'))
    const composed = fs.readFileSync(path.join(root, 'src', 'store', 'airflowStore.ts'), 'utf8')
    for (const family of families) expect(composed).toContain(`'./families/${family.replace(/\.ts$/, '.js')}'`)
  })
})
