import fs from 'node:fs/promises'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {describe, expect, it} from 'vitest'

/**
 * The README's install section works on a fresh machine today: the package is not on the npm
 * registry, so it leads with what works (a checkout, `npm pack`, the tarball installed), names
 * the tarball this version packs, and marks every registry line as applying once published.
 * CI installs that tarball the small way and runs it (.ci/run).
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

async function installSection(): Promise<string> {
  const readme = await fs.readFile(path.join(root, 'README.md'), 'utf8')
  const start = readme.indexOf('\n## Install\n')
  expect(start).toBeGreaterThan(0)
  return readme.slice(start, readme.indexOf('\n## ', start + 1))
}

const commands = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('    '))
    .map((line) => line.trim())

describe("the README's install section", () => {
  it('leads with the checkout, npm pack and the tarball this version packs', async () => {
    const {name, version} = JSON.parse(await fs.readFile(path.join(root, 'package.json'), 'utf8')) as {
      name: string
      version: string
    }
    const lines = commands(await installSection())
    expect(lines[0]).toMatch(/^npm ci\b/)
    expect(lines[1]).toMatch(/^npm pack\b/)
    expect(lines[1]).toContain(`${name}-${version}.tgz`)
    expect(lines[2]).toMatch(new RegExp(`^npm i -g \\./${name}-${version}\\.tgz\\b`))
  })

  it('marks every line that needs the registry as applying after publishing, and links the checklist', async () => {
    const section = await installSection()
    const registry = commands(section).filter((line) =>
      /^(npx airflow-airlock|npm i(nstall)? .*\bairflow-airlock\b(?!-))/.test(line),
    )
    expect(registry.length).toBeGreaterThan(0)
    for (const line of registry) expect(line, line).toMatch(/# after publishing$/)
    expect(section).toContain('docs/releasing.md')
    const releasing = await fs.readFile(path.join(root, 'docs', 'releasing.md'), 'utf8')
    for (const step of ['npm version', 'CHANGELOG', 'npm pack --dry-run', '--provenance'])
      expect(releasing).toContain(step)
  })
})
