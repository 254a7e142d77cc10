import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {describe, expect, it} from 'vitest'

/**
 * The fast lane (`npm run test:unit`, vitest.unit.config.ts) is every `*.unit.test.ts`, chosen by
 * name: such a file must run with no database server and no build. It runs without the global
 * setup that starts the test server, and usually before `npm run build`. A unit file that reaches
 * the per-file database or the built CLI, itself or through a test helper it imports, would pass
 * only on a machine that happens to have both: it belongs in the full suite, under a name without
 * `.unit`.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const self = path.relative(root, fileURLToPath(import.meta.url))

/** What a unit file may not reach, and why. */
const forbiddenModules: Record<string, string> = {
  'test/support/database.ts': 'the per-file database (a server, and the global setup that starts it)',
  'test/support/cli.ts': 'runs the built CLI (bin/run.js → dist/)',
  'test/support/globalSetup.ts': 'starts the test server',
  'test/support/testServer.ts': 'starts a PostgreSQL server',
}

/** Text in a test file that needs the build or the test server whatever it imports. */
const forbiddenText: Array<[RegExp, string]> = [
  [/\binject\(/, "reads the global setup's values (vitest inject)"],
  [/AIRLOCK_TEST_DATABASE_URL/, 'connects to the test server itself'],
  [/['"]dist['"/]/, 'reads dist/'],
  [/['"]oclif\.manifest\.json['"]/, 'reads the manifest `npm run build` writes'],
  [/['"]bin['"],\s*['"]run\.js['"]|bin\/run\.js['"]/, 'runs bin/run.js'],
  [/\bConfig\.load\(/, 'loads the commands oclif finds in dist/'],
]

function testFiles(dir: string): string[] {
  return fs.readdirSync(dir, {withFileTypes: true}).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return testFiles(full)
    return entry.name.endsWith('.ts') ? [full] : []
  })
}

/** The files of test/ a file imports, relative to the root (`./x.js` names the source `./x.ts`). */
function testImports(file: string): string[] {
  const text = fs.readFileSync(path.join(root, file), 'utf8')
  return [...text.matchAll(/(?:^(?:import|export)[^'"]*from |^import |import\()'(\.[^']+)'/gm)]
    .map((match) => path.relative(root, path.resolve(path.dirname(path.join(root, file)), match[1]!)))
    .map((target) => target.replace(/\.js$/, '.ts'))
    .filter((target) => target.startsWith(`test${path.sep}`))
}

/** Why `file` needs a database or a build: each reason with the chain of imports that leads there. */
function needs(file: string): string[] {
  const reasons: string[] = []
  const seen = new Set<string>()
  const visit = (current: string, chain: string[]): void => {
    if (seen.has(current)) return
    seen.add(current)
    const via = [...chain, current].join(' → ')
    const forbidden = forbiddenModules[current.split(path.sep).join('/')]
    if (forbidden) {
      reasons.push(`${via}: ${forbidden}`)
      return
    }
    // This file names what it looks for, and needs none of it.
    const text = current === self ? '' : fs.readFileSync(path.join(root, current), 'utf8')
    for (const [pattern, reason] of forbiddenText) if (pattern.test(text)) reasons.push(`${via}: ${reason}`)
    for (const target of testImports(current)) visit(target, [...chain, current])
  }
  visit(file, [])
  return reasons
}

const all = testFiles(path.join(root, 'test')).map((file) => path.relative(root, file))
const unitFiles = all.filter((file) => file.endsWith('.unit.test.ts'))

describe('the fast lane', () => {
  it('holds the files named *.unit.test.ts', () => {
    expect(unitFiles.length).toBeGreaterThan(30)
  })

  it('the check finds a database and the CLI where a test reaches them through its helpers', () => {
    const reasons = needs(path.join('test', 'undo', 'undo.test.ts'))
    expect(reasons.some((reason) => reason.endsWith(forbiddenModules['test/support/database.ts']!))).toBe(true)
    expect(reasons.some((reason) => reason.endsWith(forbiddenModules['test/support/cli.ts']!))).toBe(true)
    expect(needs(path.join('test', 'cli', 'startup.test.ts'))).not.toEqual([])
    expect(needs(path.join('test', 'cli', 'helpText.test.ts'))).not.toEqual([])
  })

  it('no *.unit.test.ts reaches the database, the test server or the built CLI', () => {
    expect(unitFiles.flatMap(needs)).toEqual([])
  })
})
