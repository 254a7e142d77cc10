import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {inject} from 'vitest'
import {afterAll, describe, expect, it, onTestFinished} from 'vitest'

import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'

/** A smoke run of the benchmark so it cannot rot; the full run is `npm run bench`. */
describe('airlock bench --quick', () => {
  const databases: TestDatabase[] = []
  afterAll(async () => {
    for (const database of databases) await database.drop()
  })

  it('measures both orderings and the floor, throughput and the race, and drops its scratch databases', async () => {
    const adminUrl = inject('adminUrl')
    const probe = await createTestDatabase('empty', 1)
    databases.push(probe)
    const benchDatabases = async () =>
      (await probe.knex.raw(`select count(*)::int as n from pg_database where datname like 'airlock_bench_%'`)).rows[0]
        .n as number
    const before = await benchDatabases()
    // Named by a profile of a configuration file, as an operator's perf lab would be; a
    // DATABASE_URL in the environment is never a benchmark's server.
    const configDir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-bench-'))
    onTestFinished(() => fs.rm(configDir, {recursive: true, force: true}))
    const config = path.join(configDir, 'config.toml')
    await fs.writeFile(config, `[profiles.lab]\nurl = ${JSON.stringify(adminUrl)}\n`)
    const result = await runCli(['bench', '--quick', '--profile', 'lab', '--json'], {
      env: {AIRLOCK_CONFIG: config, DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none'},
    })
    expect(result.code).toBe(0)
    const out = envelope(result) as {
      result: {
        lockHold: Array<{outlets: number; lockHold: Record<string, {p50: number; n: number}>}>
        throughput: Array<{
          perSecond: number
          failed: number
          floorPerSecond: number | null
          cpu: Record<'complete' | 'noDownstream' | 'floor', {clientMs: number; serverMs: number | null}>
          firstBatch: {
            complete: number
            floor: number
            cpu: Record<'complete' | 'floor', {clientMs: number; serverMs: number | null}>
          }
        }>
        race: {completed: number; alreadySuccess: number}
        lineage: Array<{
          collector: 'off' | number
          items: number
          perSecond: number
          lineage: Record<string, number> | null
        }>
      }
    }
    expect(out.result.lockHold.map((r) => r.outlets)).toEqual([0, 10])
    for (const row of out.result.lockHold) {
      for (const order of ['register_first', 'lock_first', 'floor']) {
        expect(row.lockHold[order]!.n).toBe(2)
        expect(row.lockHold[order]!.p50).toBeGreaterThan(0)
      }
    }

    expect(out.result.throughput[0]).toMatchObject({failed: 0})
    expect(out.result.throughput[0]!.perSecond).toBeGreaterThan(0)
    // The raw floor ran the same items beside it.
    expect(out.result.throughput[0]!.floorPerSecond).toBeGreaterThan(0)
    // Where the gap to the floor goes: each variant's CPU per completion, this process's and the
    // local server's (a test server is always on this machine, so it is measured, never null).
    // The kernel counts CPU in 10 ms ticks: the server's share of 20 quick items can round to 0
    // for one variant, so it is held to being measured, and to adding up over the three.
    let serverMs = 0
    for (const variant of ['complete', 'noDownstream', 'floor'] as const) {
      expect(out.result.throughput[0]!.cpu[variant].clientMs).toBeGreaterThan(0)
      expect(out.result.throughput[0]!.cpu[variant].serverMs).not.toBeNull()
      serverMs += out.result.throughput[0]!.cpu[variant].serverMs!
    }
    expect(serverMs).toBeGreaterThan(0)
    // The warm-up batches are reported as a process's first batch, with their CPU.
    const {firstBatch} = out.result.throughput[0]!
    expect(firstBatch.complete).toBeGreaterThan(0)
    expect(firstBatch.floor).toBeGreaterThan(0)
    expect(firstBatch.cpu.complete.clientMs).toBeGreaterThan(0)
    expect(firstBatch.cpu.floor.serverMs).not.toBeNull()
    expect(out.result.race).toMatchObject({completed: 1, alreadySuccess: 3})
    // Lineage off beside a collector answering in 1 s: every item done either way, and every
    // completed one's COMPLETE confirmed by the slow collector.
    const [off, fast, slow] = out.result.lineage
    expect(off).toMatchObject({collector: 'off', items: 10})
    const completed = off!.lineage!.disabled!
    expect(completed).toBeGreaterThan(0)
    for (const [row, ms] of [
      [fast, 0],
      [slow, 1000],
    ] as const) {
      expect(row).toMatchObject({collector: ms, items: 10})
      expect(row!.lineage).toEqual({sent: completed, maybe_delivered: 0, failed: 0, not_tried: 0})
    }
    expect(slow!.perSecond).toBeGreaterThan(0)

    expect(await benchDatabases()).toBe(before)
  })

  it('--world lineage-delivery --quick: lineage off and the two collectors, every COMPLETE confirmed, the extra time and the POSTs at once', async () => {
    const adminUrl = inject('adminUrl')
    const result = await runCli([
      'bench',
      '--world',
      'lineage-delivery',
      '--quick',
      '--database-url',
      adminUrl,
      '--json',
    ])
    expect(result.code, result.stderr).toBe(0)
    type Row = {collector: 'off' | number; items: number; maxInFlight: number; lineage: Record<string, number> | null}
    const rows = (envelope(result) as {result: {lineageDelivery: Row[]}}).result.lineageDelivery
    expect(rows.map((row) => row.collector)).toEqual(['off', 0, 2000])
    expect(rows[0]).toMatchObject({items: 4, maxInFlight: 0, lineage: {disabled: 4}})
    for (const row of rows.slice(1)) {
      expect(row.lineage).toEqual({sent: 4, maybe_delivered: 0, failed: 0, not_tried: 0})
      expect(row.maxInFlight).toBeGreaterThanOrEqual(1)
    }
    // The slow collector held the four at once: they are sent beside the completions, not in turn.
    expect(rows[2]!.maxInFlight).toBeGreaterThan(1)
  })

  it('--scale --quick: seeds a world, runs each reading command over it, finds exactly what was planted, explains the plans, writes scale.md', async () => {
    const adminUrl = inject('adminUrl')
    const out = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-bench-scale-'))
    onTestFinished(() => fs.rm(out, {recursive: true, force: true}))
    const result = await runCli(['bench', '--scale', '--quick', '--database-url', adminUrl, '--output', out, '--json'])
    expect(result.code).toBe(0)
    const {scale} = (
      envelope(result) as {
        result: {
          scale: {
            world: {taskInstances: number; running: number; events: number}
            audit: {
              counts: Record<string, number>
              planted: {duplicates: number; missing: number; orphans: number; superseded: number}
            }
            commands: Array<{args: string[]; rows: number; seconds: number; peakRssMb: number; exitCode: number}>
            explain: Array<{what: string; seqScans: Array<{table: string; rows: number}>}>
            exportFloor: {lines: number; floorSeconds: number; exportSeconds: number}
            explainFloor: {rows: number; scanSeconds: number; explainSeconds: number}
          }
        }
      }
    ).result
    expect(scale.world.taskInstances).toBe(2000)
    expect(scale.world.running).toBe(100)
    const {counts, planted} = scale.audit
    expect(planted.duplicates).toBeGreaterThan(0)
    expect(planted.missing).toBeGreaterThan(0)
    expect(planted.superseded).toBeGreaterThan(0)
    expect([counts.duplicate, counts.missing_events, counts.orphan_missing_ti, counts.superseded_by_rerun]).toEqual([
      planted.duplicates,
      planted.missing,
      planted.orphans,
      planted.superseded,
    ])
    expect(scale.commands.map((c) => c.args[0])).toEqual([
      'audit-events',
      'export-events',
      'explain',
      'replay-events',
      'replay-events',
      'complete',
      // Right after a backfill: the backfill itself, then the two checks that must stay cheap.
      'complete',
      'audit-events',
      'replay-events',
    ])
    // The post-backfill world finds nothing missing: the audit exits 0, not 6.
    expect(scale.commands.at(-2)!.exitCode).toBe(0)
    for (const command of scale.commands) {
      expect(command.rows).toBeGreaterThan(0)
      expect(command.peakRssMb).toBeGreaterThan(0)
    }
    // The export's floor wrote every event's line, and is timed beside the export itself.
    expect(scale.exportFloor.lines).toBe(scale.world.events)
    expect(scale.exportFloor.floorSeconds).toBeGreaterThan(0)
    expect(scale.exportFloor.exportSeconds).toBe(scale.commands[1]!.seconds)
    // explain --all read a queue the bench filled, timed beside one scan of it.
    expect(scale.explainFloor.rows).toBe(scale.commands[2]!.rows)
    expect(scale.explainFloor.explainSeconds).toBe(scale.commands[2]!.seconds)
    // The classification pass reads asset_event in full, and says so.
    const pass = scale.explain.find((e) => e.what.includes('classification'))!
    expect(pass.seqScans.filter((s) => s.table === 'asset_event').map((s) => s.rows)).toEqual([
      scale.world.events,
      scale.world.events,
    ])
    expect(await fs.readFile(path.join(out, 'scale.md'), 'utf8')).toContain(
      'What the audit found against what was planted',
    )
  })

  it('--scale --sizes: one world per size, the growth of each command across them, growth.svg', async () => {
    const adminUrl = inject('adminUrl')
    const out = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-bench-sizes-'))
    onTestFinished(() => fs.rm(out, {recursive: true, force: true}))
    const result = await runCli([
      'bench',
      '--scale',
      '--quick',
      '--sizes',
      '2k,4k',
      '--database-url',
      adminUrl,
      '--output',
      out,
      '--json',
    ])
    expect(result.code).toBe(0)
    const {sizes, growth} = (
      envelope(result) as {
        result: {
          sizes: Array<{world: {events: number; taskInstances: number}}>
          growth: {rows: Array<{key: string; points: Array<{microsPerRow: number; peakRssMb: number} | null>}>}
        }
      }
    ).result
    expect(sizes.map((s) => s.world.taskInstances)).toEqual([200, 400])
    expect(growth.rows.map((row) => row.key)).toEqual([
      'audit-events',
      'export-events',
      'explain --all',
      'replay-events --dry-run, every task instance',
      'replay-events --dry-run, one day',
      'complete --dry-run, one day of runs',
    ])
    for (const row of growth.rows) {
      expect(row.points).toHaveLength(2)
      for (const point of row.points) expect(point!.microsPerRow).toBeGreaterThan(0)
    }
    expect(await fs.readFile(path.join(out, 'growth.svg'), 'utf8')).toContain('<polyline')
    expect(await fs.readFile(path.join(out, 'scale.md'), 'utf8')).toContain('### Growth')
  })

  it('--world preview-price --quick: the preview beside --no-downstream and the floor on consumers of every asset', async () => {
    const result = await runCli([
      'bench',
      '--world',
      'preview-price',
      '--quick',
      '--database-url',
      inject('adminUrl'),
      '--json',
    ])
    expect(result.code).toBe(0)
    const out = envelope(result) as {
      result: {
        previewPrice: {
          world: {tasks: number; outlets: number; consumers: number; pausedConsumers: number}
          rows: Array<{
            queueRows: number
            consumerRows: number
            outlets: number
            register: Record<'preview' | 'no_downstream' | 'floor', {p50: number; n: number}>
            lockHold: Record<'preview' | 'no_downstream' | 'floor', {p50: number; n: number}>
          }>
        }
      }
    }
    const {world, rows} = out.result.previewPrice
    expect(world).toMatchObject({tasks: 41, outlets: 600, consumers: 2, pausedConsumers: 1})
    expect(rows.map((row) => [row.queueRows, row.consumerRows, row.outlets])).toEqual([[1000, 1000, 10]])
    for (const variant of ['preview', 'no_downstream', 'floor'] as const) {
      expect(rows[0]!.register[variant].n).toBe(2)
      expect(rows[0]!.lockHold[variant].p50).toBeGreaterThan(0)
    }
  })

  it('--world explain-all --quick: explain --all beside its floor, both as processes and in process', async () => {
    const result = await runCli([
      'bench',
      '--world',
      'explain-all',
      '--quick',
      '--database-url',
      inject('adminUrl'),
      '--json',
    ])
    expect(result.code).toBe(0)
    const out = envelope(result) as {
      result: {
        explainAll: {
          rows: Array<{
            assets: number
            consumers: number
            queueRows: number
            outputBytes: number
            process: Record<'explain' | 'floor', {p50: number; n: number}>
            inProcess: Record<'explain' | 'floor', {p50: number; n: number}>
            peakRssMb: Record<'explain' | 'floor', number>
          }>
        }
      }
    }
    const [row] = out.result.explainAll.rows
    // 300 assets over 3 consumers (report_001 also on etl_001's 10), each queued on all but its newest.
    expect(row).toMatchObject({assets: 300, consumers: 3, queueRows: 304})
    expect(row!.outputBytes).toBeGreaterThan(0)
    for (const which of ['explain', 'floor'] as const) {
      expect(row!.process[which].n).toBe(1)
      expect(row!.process[which].p50).toBeGreaterThan(0)
      expect(row!.inProcess[which].p50).toBeGreaterThan(0)
      expect(row!.peakRssMb[which]).toBeGreaterThan(0)
    }
  })

  it('--world preview-events --quick: the preview beside --no-downstream on 3.4, consumers under a backlog of events', async () => {
    const result = await runCli([
      'bench',
      '--world',
      'preview-events',
      '--quick',
      '--database-url',
      inject('adminUrl'),
      '--json',
    ])
    expect(result.code).toBe(0)
    const out = envelope(result) as {
      result: {
        previewEvents: {
          world: {tasks: number; outlets: number; consumers: number}
          rows: Array<{queueRows: number; register: Record<'preview' | 'no_downstream', {p50: number; n: number}>}>
        }
      }
    }
    const {world, rows} = out.result.previewEvents
    expect(world).toMatchObject({tasks: 2, outlets: 10, consumers: 3})
    expect(rows.map((row) => row.queueRows)).toEqual([300])
    for (const variant of ['preview', 'no_downstream'] as const) {
      expect(rows[0]!.register[variant].n).toBe(2)
      expect(rows[0]!.register[variant].p50).toBeGreaterThan(0)
    }
  })

  it('--sizes without --scale, or a size no world can be, is refused (exit 2)', async () => {
    const adminUrl = inject('adminUrl')
    expect((await runCli(['bench', '--sizes', '1M', '--database-url', adminUrl])).code).toBe(2)
    const tiny = await runCli(['bench', '--scale', '--sizes', '1k', '--database-url', adminUrl])
    expect(tiny.code).toBe(2)
    expect(tiny.stderr).toContain('a world holds 200 to 2,000,000')
  })

  it('a command the benchmark runs that ends with its own documented exit passes that exit on, not exit 1 (a bug)', async () => {
    // The built module: it finds the CLI next to dist/, as `airlock bench` runs it.
    const {peakRssOf} = (await import(
      path.resolve('dist/src/bench/memory.js')
    )) as typeof import('../../src/bench/memory.js')
    const failure = await peakRssOf(['complete', '--no-such-flag']).catch((error: unknown) => error)
    expect(failure).toMatchObject({name: 'AirlockError', code: 'BENCH_COMMAND_FAILED', exit: 2})
    expect((failure as Error).message).toContain('airlock complete exited 2')
  })

  it('refuses to run next to a database that holds a real Airflow schema (exit 2)', async () => {
    const airflow = await createTestDatabase('empty', 1)
    databases.push(airflow)
    await airflow.knex.raw('create table alembic_version (version_num varchar(32) primary key)')
    const result = await runCli(['bench', '--quick', '--database-url', airflow.url])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('real Airflow schema')
  })
})
