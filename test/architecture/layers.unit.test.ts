import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {describe, expect, it} from 'vitest'

/**
 * The layering of docs/architecture.md, checked on every import of src/ and commands/: a file may
 * import from its own folder or from a folder of a lower rank, never upward, and features of the
 * same rank never import each other.
 */
const rank: Record<string, number> = {
  airflow: 0,
  output: 0,
  input: 0,
  'exitCodes.ts': 0,
  'errors.ts': 0.5,
  engine: 1,
  worlds: 2,
  store: 3,
  sandbox: 3,
  selection: 4,
  connection: 4,
  protocol: 5,
  batch: 6,
  report: 6,
  lineage: 6,
  complete: 7,
  replay: 7,
  audit: 7,
  export: 7,
  explain: 7,
  doctor: 7,
  undo: 7,
  bench: 8,
  cli: 9,
  commands: 10,
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The layer a file belongs to: its folder under src/, or `commands`. */
function layerOf(file: string): string {
  const relative = path.relative(root, file).split(path.sep)
  if (relative[0] === 'commands') return 'commands'
  // Imports name the compiled file (`../errors.js`): the layer is the source file's.
  if (relative[0] === 'src') return relative[1]!.replace(/\.js$/, '.ts')
  return relative[0]!
}

function sources(dir: string): string[] {
  return fs.readdirSync(dir, {withFileTypes: true}).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return sources(full)
    return entry.name.endsWith('.ts') ? [full] : []
  })
}

const imports = [...sources(path.join(root, 'src')), ...sources(path.join(root, 'commands'))].flatMap((file) =>
  [...fs.readFileSync(file, 'utf8').matchAll(/(?:^(?:import|export)[^'"]*from |import\()'(\.[^']+)'/gm)].map(
    (match) => {
      const target = path.resolve(path.dirname(file), match[1]!)
      return {
        file: path.relative(root, file),
        from: layerOf(file),
        to: layerOf(target),
        target: path.relative(root, target),
      }
    },
  ),
)

describe('layers', () => {
  it('every folder of src/ has a rank', () => {
    const folders = fs.readdirSync(path.join(root, 'src'))
    expect(folders.filter((folder) => rank[folder] === undefined)).toEqual([])
  })

  it('no file imports upward or sideways', () => {
    expect(imports.length).toBeGreaterThan(100)
    const wrong = imports
      .filter(({from, to}) => to !== 'migrations' && from !== to && !(rank[to]! < rank[from]!))
      .map(({file, target}) => `${file} → ${target}`)
    expect(wrong).toEqual([])
  })

  it('only the store, the engine and the world builders reach the database directly', () => {
    const direct = [...sources(path.join(root, 'src')), ...sources(path.join(root, 'commands'))]
      .filter((file) => /from 'knex'|from 'pg'/.test(fs.readFileSync(file, 'utf8')))
      .map((file) => layerOf(file))
    expect([...new Set(direct)].sort()).toEqual(['engine', 'worlds'])
  })
})
