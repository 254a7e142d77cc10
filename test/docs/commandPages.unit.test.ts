import {readdirSync, readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import path from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'

import {describe, expect, it} from 'vitest'

import {blocksOf, pageOf, renderCommandPage, type ManifestCommand} from '../../src/cli/commandPages.js'

/**
 * The flags and outcomes blocks of each command's page in docs/ are what `npm run docs:commands`
 * writes: a flag, a default, an exit code or an outcome changed in the code without running it
 * fails here.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

/**
 * The page a command's blocks are not required on yet: docs/bench.md is the benchmark's report,
 * rewritten beside this check.
 */
const withoutBlocks = new Set<string>([])

/**
 * oclif's own serialisation of a command class (what scripts/oclif-manifest.mjs writes, through
 * Plugin), so the manifest is read from the TypeScript sources and the check needs no build.
 * @oclif/core does not export it; its file is loaded by path.
 */
const require = createRequire(import.meta.url)
const {cacheCommand} = require(path.join(path.dirname(require.resolve('@oclif/core')), 'util', 'cache-command.js')) as {
  cacheCommand: (command: unknown, plugin: undefined, respectNoCacheDefault: boolean) => Promise<ManifestCommand>
}

function commandFiles(dir: string): string[] {
  return readdirSync(dir, {withFileTypes: true}).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return commandFiles(full)
    return entry.name.endsWith('.ts') ? [full] : []
  })
}

/** Every command of commands/, as the manifest records it, by id (`lineage:resend`). */
async function manifestCommands(): Promise<Record<string, ManifestCommand>> {
  const dir = path.join(root, 'commands')
  const entries = await Promise.all(
    commandFiles(dir).map(async (file): Promise<[string, ManifestCommand]> => {
      const id = path.relative(dir, file).replace(/\.ts$/, '').split(path.sep).join(':')
      const module = (await import(pathToFileURL(file).href)) as {default: unknown}
      return [id, await cacheCommand(module.default, undefined, true)]
    }),
  )
  return Object.fromEntries(entries)
}

const readPage = (name: string) => readFileSync(path.join(root, 'docs', name), 'utf8')

describe("the commands' pages", () => {
  it('hold the flags and outcomes blocks npm run docs:commands writes', async () => {
    const commands = await manifestCommands()
    const pages = readdirSync(path.join(root, 'docs')).filter((name) => name.endsWith('.md'))
    for (const name of pages) {
      const page = readPage(name)
      expect(renderCommandPage(page, commands), `docs/${name} (run npm run docs:commands)`).toBe(page)
    }
  })

  it("each command's page has one flags and one outcomes block for it", async () => {
    const commands = await manifestCommands()
    expect(Object.keys(commands)).toContain('complete')
    for (const id of Object.keys(commands)) {
      const name = pageOf(id)
      if (name === undefined || withoutBlocks.has(id)) continue
      const blocks = blocksOf(readPage(name)).filter((block) => block.id === id)
      expect(blocks.map((block) => block.kind).sort(), `docs/${name}: ${id}`).toEqual(['flags', 'outcomes'])
    }
  })
})
