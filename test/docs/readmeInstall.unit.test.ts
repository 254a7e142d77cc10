import fs from 'node:fs/promises'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {describe, expect, it} from 'vitest'

/**
 * The README's install section works on a fresh machine today, in the order an operator tries
 * things: the single executable, the image, then npm. The package is not on the npm registry, so
 * the npm way is a checkout, `npm pack` and the tarball this version packs, and every registry
 * line is marked as applying once published. CI builds and runs each of them (.ci/run).
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
  it('leads with the executable, then the image, then the checkout, npm pack and the tarball this version packs', async () => {
    const {name, version, scripts} = JSON.parse(await fs.readFile(path.join(root, 'package.json'), 'utf8')) as {
      name: string
      version: string
      scripts: Record<string, string>
    }
    const lines = commands(await installSection())
    // The single file first: built by a script this package has, then installed and run.
    expect(lines[0]).toMatch(/^npm ci && npm run build:executable\b/)
    expect(scripts['build:executable']).toBe('node scripts/executable/build.mjs')
    expect(lines[1]).toMatch(/^install -m 755 build\/executable\/airlock-linux-x64 /)
    // Then the image, by the name scripts/executable/image.mjs gives it.
    const image = lines.findIndex((line) => line.startsWith('node scripts/executable/image.mjs'))
    expect(image).toBeGreaterThan(1)
    expect(lines[image]).toContain(`airlock-image-${version}-linux-amd64.tar`)
    // Then npm: the checkout, npm pack, the tarball this version packs.
    const pack = lines.findIndex((line) => /^npm pack\b/.test(line))
    expect(pack).toBeGreaterThan(image)
    expect(lines[pack - 1]).toMatch(/^npm ci\b/)
    expect(lines[pack]).toContain(`${name}-${version}.tgz`)
    expect(lines[pack + 1]).toMatch(new RegExp(`^npm i -g \\./${name}-${version}\\.tgz\\b`))
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
