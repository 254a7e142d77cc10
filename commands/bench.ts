import fs from 'node:fs/promises'
import path from 'node:path'

import {Flags, type Interfaces} from '@oclif/core'

import {lockHoldChart} from '../src/bench/chart.js'
import {growthChart, growthMarkdown, growthOf, parseEventSizes, type Growth} from '../src/bench/growth.js'
import {benchMarkdown, benchTerminal, lineageDeliveryMarkdown, scaleMarkdown} from '../src/bench/report.js'
import {measureLineageDelivery, type LineageDeliveryRow} from '../src/bench/lineageDelivery.js'
import {describeMachine, runBench, type BenchReport} from '../src/bench/runBench.js'
import {runScale, type ScaleReport} from '../src/bench/scale.js'
import {
  measurePreviewPrice,
  previewPriceDefaults,
  previewPriceMarkdown,
  type PreviewPriceReport,
} from '../src/bench/previewPrice.js'
import {
  explainAllDefaults,
  explainAllMarkdown,
  measureExplainAll,
  type ExplainAllReport,
} from '../src/bench/explainAll.js'
import {
  measurePreviewEvents,
  previewEventsDefaults,
  previewEventsMarkdown,
  type PreviewEventsReport,
} from '../src/bench/previewEvents.js'
import {openScratchServer, type ScratchServer} from '../src/bench/scratch.js'
import {AirlockCommand, type CommandOutcome} from '../src/cli/baseCommand.js'
import {parseIntegerList} from '../src/cli/parseInput.js'
import {connectionFlags} from '../src/cli/connectionFlags.js'
import {environments} from '../src/connection/environments.js'
import {resolveConnection} from '../src/connection/resolve.js'
import {passwordOf} from '../src/connection/url.js'
import {sandboxHome, sandboxUrl} from '../src/sandbox/sandbox.js'
import {prose} from '../src/cli/prose.js'
import {usageError} from '../src/errors.js'

type BenchResult =
  | (BenchReport & {written: string[]})
  | {machine: BenchReport['machine']; previewPrice: PreviewPriceReport; written: string[]}
  | {machine: BenchReport['machine']; explainAll: ExplainAllReport; written: string[]}
  | {machine: BenchReport['machine']; previewEvents: PreviewEventsReport; written: string[]}
  | {machine: BenchReport['machine']; lineageDelivery: LineageDeliveryRow[]; rounds: number; written: string[]}
  | {
      machine: BenchReport['machine']
      scale: ScaleReport
      /** --sizes: every world's report, smallest first (`scale` is the last), and the growth across them. */
      sizes?: ScaleReport[]
      growth?: Growth
      written: string[]
    }

export default class Bench extends AirlockCommand<BenchResult> {
  static override summary = 'Time the row lock a completion holds: airlock, the old order, a raw floor.'
  static override description =
    prose(`Runs on scratch databases it creates and drops (on the sandbox unless --database-url names a
server where it may create databases; it refuses a database holding real Airflow data). Both
orderings run through the same protocol code; the floor is a few lines of raw node-postgres doing
the same inserts, then FOR UPDATE + UPDATE + COMMIT. Also: completions/s per concurrency, the
same-task-instance race, and the peak memory of a large backfill. Writes bench/results/.

--scale runs only the production-scale section: a world of a million task instances and ten
million events (about 2 minutes to seed, 3 GB of disk), each reading command over it with its
time, rows/s and peak RSS, and EXPLAIN (ANALYZE) of the statements they send. About 10 minutes.

--world preview-price runs only the downstream preview's price (issue 44): a producer of 41 tasks ×
600 outlets, 2 unpaused and 1 paused consumer DAGs each scheduled on all 24,600 assets, the queue
filled to --queue-sizes rows; registration with the preview, with --no-downstream and as the raw
floor, side by side, at --outlets 10,300,600, and the lock hold. Writes preview-price.md and
preview-price.json. About 5 minutes.

--world preview-events runs the same question on Airflow 3.4's queue (a row per pending event): 3
consumer DAGs each scheduled on the 20 assets of a small producer, a backlog of events filling the
queue to --queue-sizes rows; registration with the preview and with --no-downstream, side by side.
Writes preview-events.md and preview-events.json. About a minute.

--world explain-all runs only explain --all beside its floor (issue 44): the scale world's 3
consumer DAGs and their queue without its task instances, at --queue-sizes assets (10k, the
scale world of 200,000 task instances, unless given), --memory-events events (10 per asset unless
given); explain --all --ndjson and a plain scan of asset_dag_run_queue and
dag_schedule_asset_reference, each as a child process and inside the bench's own process, --runs
alternated rounds (5 unless given), and the peak RSS of each. Writes explain-all.md and
explain-all.json. About a minute.

--world lineage-delivery runs only complete beside an OpenLineage collector: over --lineage-items
task instances (12 unless given), with lineage off, sending to a local collector that answers at
once and to one that answers each COMPLETE in --lineage-collector-ms (2000 unless given), at the
default --lineage-wait an operator gets; --runs rounds (5 unless given), medians, with what
lineage adds to the process and the most POSTs the collector held at once. Writes
lineage-delivery.md and lineage-delivery.json. About a minute.`)

  static override examples = [
    '<%= config.bin %> bench',
    '<%= config.bin %> bench --quick',
    '<%= config.bin %> bench --database-url postgresql://postgres@127.0.0.1/postgres',
    '<%= config.bin %> bench --profile perf-lab --quick',
    '<%= config.bin %> bench --profile perf-lab --outlets 0,600',
    '<%= config.bin %> bench --scale --profile perf-lab',
    '<%= config.bin %> bench --world preview-price --profile perf-lab',
    '<%= config.bin %> bench --world explain-all --queue-sizes 10k,100k --profile perf-lab',
    '<%= config.bin %> bench --world preview-events --profile perf-lab',
    '<%= config.bin %> bench --world lineage-delivery --profile perf-lab',
  ]

  static override flags = {
    'database-url': Flags.string({
      description: 'A database of the server where scratch databases may be created (default: the sandbox).',
      helpGroup: 'CONNECTION',
    }),
    profile: connectionFlags.profile,
    env: connectionFlags.env,
    embedded: Flags.boolean({
      description:
        'Run on the embedded sandbox, starting it if needed (the default when no other connection is named).',
      helpGroup: 'CONNECTION',
      // Not 'env': --env excludes --embedded itself (see connectionFlags).
      exclusive: ['database-url', 'profile'],
    }),
    outlets: Flags.string({description: 'Outlet counts for the lock-hold table.', default: '0,10,100,300,600,1000'}),
    runs: Flags.integer({description: 'Measured runs per point.', default: 14, min: 1}),
    warmup: Flags.integer({description: 'Warm-up runs per point (discarded).', default: 3, min: 0}),
    consumers: Flags.integer({description: 'Consumer DAGs scheduled on each asset.', default: 1, min: 1, max: 20}),
    concurrency: Flags.string({description: 'Concurrency levels for the throughput table.', default: '1,2,4,8'}),
    'throughput-outlets': Flags.string({description: 'Outlet counts for the throughput table.', default: '10,300'}),
    'throughput-items': Flags.integer({description: 'Task instances per throughput point.', default: 400, min: 1}),
    race: Flags.integer({description: 'Concurrent completions of one task instance (0 skips).', default: 32, min: 0}),
    'lineage-items': Flags.integer({
      description:
        'Task instances in the lineage delivery run: complete with lineage off, then sending to a local collector that answers in 1 s (0 skips).',
      default: 200,
      min: 0,
    }),
    'lineage-collector-ms': Flags.integer({
      description:
        'Milliseconds the slow collector of the lineage delivery run takes to answer each COMPLETE (default 1000; 2000 with --world lineage-delivery).',
      min: 0,
      max: 60_000,
    }),
    'memory-tis': Flags.integer({
      description: 'Task instances in the memory run of complete (0 skips).',
      default: 100_000,
      min: 0,
    }),
    'memory-events': Flags.integer({
      description:
        'Events in the memory run of export-events (0 skips). With --world explain-all: the events of its world (default 10 per asset).',
      default: 100_000,
      min: 0,
    }),
    'stamp-runs': Flags.integer({
      description: 'Completions per variant of the event-to-commit window (0 skips).',
      default: 30,
      min: 0,
    }),
    'stamp-hold': Flags.integer({
      description: 'Milliseconds the concurrent holder keeps the row locked there.',
      default: 1000,
      min: 1,
    }),
    output: Flags.string({
      char: 'o',
      aliases: ['out'],
      description: 'The directory for results.md, results.json and lock-hold.svg (--out is the old name).',
      default: 'bench/results',
      helpValue: 'DIR',
    }),
    quick: Flags.boolean({
      description: 'A smoke run: tiny sizes, nothing written unless --output is given.',
      default: false,
    }),
    scale: Flags.boolean({
      description:
        'Only the production-scale run: seed --scale-tis task instances (10 events each), run audit-events, export-events, replay-events and complete over them, EXPLAIN what they send. Writes scale.md and scale.json.',
      default: false,
      helpGroup: 'SCALE',
    }),
    'scale-tis': Flags.integer({
      description: 'Task instances in the scale world (20 runs of 10 tasks per DAG).',
      default: 1_000_000,
      min: 200,
      max: 2_000_000,
      helpGroup: 'SCALE',
    }),
    'scale-backfill-tis': Flags.integer({
      description:
        'Task instances of the post-backfill world (one task, old runs, completed by airlock) whose audit and replay check are timed; 0 skips it.',
      default: 9000,
      min: 0,
      // One run a day back from today per task instance: the seed's limit on runs.
      max: 10_000,
    }),
    sizes: Flags.string({
      description:
        "With --scale: worlds of these sizes in asset events, one after another (k and M allowed), and the growth of each command's time per row and peak RSS across them. Writes growth.svg too.",
      helpValue: '100k,1M,10M',
      helpGroup: 'SCALE',
    }),
    world: Flags.string({
      description:
        "Only the named world's run: preview-price (the downstream preview beside --no-downstream and the floor, on consumers of 24,600 assets; --outlets defaults to 10,300,600 there), explain-all (explain --all beside a scan of the queue and the references), preview-events (the preview on the queue of main's 3.4 development line, a row per event, consumers of 20 assets), lineage-delivery (complete with lineage off and to a collector answering at once and in --lineage-collector-ms, at the default --lineage-wait; --lineage-items defaults to 12, --runs to 5 there).",
      options: ['preview-price', 'explain-all', 'preview-events', 'lineage-delivery'],
      helpGroup: 'WORLD',
    }),
    'queue-sizes': Flags.string({
      description:
        'With --world preview-price or preview-events: the queue sizes (asset_dag_run_queue rows) to fill to, k allowed. With --world explain-all: the assets of each world (its queue holds a row for all but one per consumer; default 10k).',
      default: '1k,10k,100k',
      helpGroup: 'WORLD',
    }),
    'scale-events': Flags.integer({
      description: 'Asset events per task instance in the scale world.',
      default: 10,
      min: 1,
      max: 100,
      helpGroup: 'SCALE',
    }),
  }

  protected async execute(): Promise<CommandOutcome<BenchResult>> {
    const {flags} = await this.parse(Bench)
    const quick = flags.quick
    // Only a server named here: never AIRLOCK_DATABASE_URL, DATABASE_URL or Airflow's own
    // connection from the environment, which may well be production.
    const named = flags['database-url'] || flags.profile || flags.env
    const adminUrl = named
      ? (
          await resolveConnection(
            {databaseUrl: flags['database-url'], profile: flags.profile, env: flags.env},
            {...process.env, AIRLOCK_DATABASE_URL: undefined},
            environments,
            (message) => this.note(message),
          )
        ).url
      : (await sandboxUrl(sandboxHome())).url.replace(/\/airflow$/, '/postgres')
    const password = passwordOf(adminUrl)
    if (password) this.secrets.add(password)
    const server = await openScratchServer(adminUrl)
    this.onCleanup(() => server.dropAll())
    const wantsFiles = !quick || this.given('out', 'output', 'o')
    // The results go to --output (created if needed); nothing is written by a --quick run without it.
    const writeResults = async (files: ReadonlyArray<readonly [string, string]>): Promise<string[]> => {
      if (!wantsFiles) return []
      await fs.mkdir(flags.output, {recursive: true})
      const written: string[] = []
      for (const [name, text] of files) {
        await fs.writeFile(path.join(flags.output, name), text)
        written.push(path.join(flags.output, name))
      }
      return written
    }

    if (flags.sizes !== undefined && !flags.scale) throw usageError('--sizes goes with --scale.')
    if (flags.world === 'preview-price') return {result: await this.previewPrice(server, adminUrl, flags, writeResults)}
    if (flags.world === 'explain-all') return {result: await this.explainAll(server, adminUrl, flags, writeResults)}
    if (flags.world === 'preview-events')
      return {result: await this.previewEvents(server, adminUrl, flags, writeResults)}
    if (flags.world === 'lineage-delivery')
      return {result: await this.lineageDelivery(server, adminUrl, flags, writeResults)}
    if (flags.scale && flags.sizes !== undefined) {
      const machine = await describeMachine(adminUrl)
      const reports = await this.scaleWorlds(server, flags)
      const growth = growthOf(reports)
      const caption = `${machine.cpus} × ${machine.cpuModel}, PostgreSQL ${machine.postgres}, ${machine.date}`
      const scale = reports.at(-1)!
      const written = await writeResults([
        ['scale.md', [...growthMarkdown(growth), '', scaleMarkdown(scale, machine)].join('\n')],
        ['scale.json', JSON.stringify({machine, ...scale, sizes: reports, growth}, null, 2) + '\n'],
        ['growth.svg', growthChart(growth, caption)],
      ])
      return {result: {machine, scale, sizes: reports, growth, written}}
    }

    if (flags.scale) {
      const machine = await describeMachine(adminUrl)
      const scale = await runScale(
        server,
        {
          taskInstances: quick ? 2000 : flags['scale-tis'],
          eventsPerTi: flags['scale-events'],
          backfillTis: quick ? 200 : flags['scale-backfill-tis'],
        },
        (line) => this.progress(line),
      )
      const written = await writeResults([
        ['scale.md', scaleMarkdown(scale, machine)],
        ['scale.json', JSON.stringify({machine, ...scale}, null, 2) + '\n'],
      ])
      return {result: {machine, scale, written}}
    }

    const report = await runBench(server, benchPlan(flags), (line) => this.progress(line))
    const caption = `${report.machine.cpus} × ${report.machine.cpuModel}, PostgreSQL ${report.machine.postgres}, ${report.machine.date}`
    const written = await writeResults([
      ['results.md', benchMarkdown(report)],
      ['results.json', JSON.stringify(report, null, 2) + '\n'],
      ['lock-hold.svg', lockHoldChart(report.lockHold, caption)],
    ])
    return {result: {...report, written}}
  }

  /** --world preview-price: the downstream preview's price on consumers of every asset (issue 44). */
  private async previewPrice(
    server: ScratchServer,
    adminUrl: string,
    flags: BenchFlags,
    writeResults: (files: ReadonlyArray<readonly [string, string]>) => Promise<string[]>,
  ): Promise<{machine: BenchReport['machine']; previewPrice: PreviewPriceReport; written: string[]}> {
    const quick = flags.quick
    const machine = await describeMachine(adminUrl)
    const previewPrice = await measurePreviewPrice(
      server,
      {
        ...previewPriceDefaults,
        queueSizes: quick ? [1000] : parseQueueSizes(flags['queue-sizes']),
        outlets: this.given('outlets')
          ? parseIntegerList(flags.outlets, '--outlets')
          : quick
            ? [10]
            : previewPriceDefaults.outlets,
        runs: quick ? 2 : this.given('runs') ? flags.runs : previewPriceDefaults.runs,
        warmup: quick ? 1 : this.given('warmup') ? flags.warmup : previewPriceDefaults.warmup,
      },
      (line) => this.progress(line),
    )
    const caption = `${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGb} GiB, Node ${machine.node}, PostgreSQL ${machine.postgres}, ${machine.date}`
    const written = await writeResults([
      ['preview-price.md', previewPriceMarkdown(previewPrice, caption)],
      ['preview-price.json', JSON.stringify({machine, ...previewPrice}, null, 2) + '\n'],
    ])
    return {machine, previewPrice, written}
  }

  /** --world explain-all: explain --all beside a scan of the queue and the references (issue 44, target 4). */
  private async explainAll(
    server: ScratchServer,
    adminUrl: string,
    flags: BenchFlags,
    writeResults: (files: ReadonlyArray<readonly [string, string]>) => Promise<string[]>,
  ): Promise<{machine: BenchReport['machine']; explainAll: ExplainAllReport; written: string[]}> {
    const quick = flags.quick
    const machine = await describeMachine(adminUrl)
    const assets = quick
      ? [300]
      : this.given('queue-sizes')
        ? parseQueueSizes(flags['queue-sizes'])
        : explainAllDefaults.assets
    const explainAll = await measureExplainAll(
      server,
      {
        assets,
        ...(this.given('memory-events') ? {events: flags['memory-events']} : {}),
        rounds: quick ? 1 : this.given('runs') ? flags.runs : explainAllDefaults.rounds,
        warmup: quick ? 0 : this.given('warmup') ? flags.warmup : explainAllDefaults.warmup,
      },
      (line) => this.progress(line),
    )
    const caption = `${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGb} GiB, Node ${machine.node}, PostgreSQL ${machine.postgres}, ${machine.date}`
    const written = await writeResults([
      ['explain-all.md', explainAllMarkdown(explainAll, caption)],
      ['explain-all.json', JSON.stringify({machine, ...explainAll}, null, 2) + '\n'],
    ])
    return {machine, explainAll, written}
  }

  /** --world preview-events: the preview on 3.4's queue, small consumers under a backlog of events (issue 44). */
  private async previewEvents(
    server: ScratchServer,
    adminUrl: string,
    flags: BenchFlags,
    writeResults: (files: ReadonlyArray<readonly [string, string]>) => Promise<string[]>,
  ): Promise<{machine: BenchReport['machine']; previewEvents: PreviewEventsReport; written: string[]}> {
    const quick = flags.quick
    const machine = await describeMachine(adminUrl)
    const previewEvents = await measurePreviewEvents(
      server,
      {
        queueSizes: quick ? [300] : parseQueueSizes(flags['queue-sizes']),
        runs: quick ? 2 : this.given('runs') ? flags.runs : previewEventsDefaults.runs,
        warmup: quick ? 1 : this.given('warmup') ? flags.warmup : previewEventsDefaults.warmup,
      },
      (line) => this.progress(line),
    )
    const caption = `${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGb} GiB, Node ${machine.node}, PostgreSQL ${machine.postgres}, ${machine.date}`
    const written = await writeResults([
      ['preview-events.md', previewEventsMarkdown(previewEvents, caption)],
      ['preview-events.json', JSON.stringify({machine, ...previewEvents}, null, 2) + '\n'],
    ])
    return {machine, previewEvents, written}
  }

  /** --world lineage-delivery: what a slow collector adds to a short run of complete, at the default wait. */
  private async lineageDelivery(
    server: ScratchServer,
    adminUrl: string,
    flags: BenchFlags,
    writeResults: (files: ReadonlyArray<readonly [string, string]>) => Promise<string[]>,
  ): Promise<{
    machine: BenchReport['machine']
    lineageDelivery: LineageDeliveryRow[]
    rounds: number
    written: string[]
  }> {
    const quick = flags.quick
    const machine = await describeMachine(adminUrl)
    const items = quick ? 4 : this.given('lineage-items') ? flags['lineage-items'] : 12
    const collectorMs = flags['lineage-collector-ms'] ?? 2000
    const rounds = quick ? 1 : this.given('runs') ? flags.runs : 5
    this.progress(
      `lineage: complete over ${items} task instances, ${rounds} rounds, collector answering in ${collectorMs} ms…`,
    )
    const lineageDelivery = await measureLineageDelivery(server, {items, collectorMs, rounds})
    const caption = `${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGb} GiB, Node ${machine.node}, PostgreSQL ${machine.postgres}, ${machine.date}`
    const written = await writeResults([
      ['lineage-delivery.md', lineageDeliveryMarkdown(lineageDelivery, {rounds, wait: undefined}, caption)],
      ['lineage-delivery.json', JSON.stringify({machine, items, collectorMs, rounds, lineageDelivery}, null, 2) + '\n'],
    ])
    return {machine, lineageDelivery, rounds, written}
  }

  /** --sizes: the scale world at each size, smallest first; the post-backfill world once, after the last. */
  private async scaleWorlds(server: ScratchServer, flags: BenchFlags): Promise<ScaleReport[]> {
    const sizes = parseEventSizes(flags.sizes!, flags['scale-events'])
    const reports: ScaleReport[] = []
    for (const [i, taskInstances] of sizes.entries()) {
      const last = i === sizes.length - 1
      reports.push(
        await runScale(
          server,
          {
            taskInstances,
            eventsPerTi: flags['scale-events'],
            backfillTis: last ? (flags.quick ? 200 : flags['scale-backfill-tis']) : 0,
          },
          (line) => this.progress(line),
        ),
      )
    }
    return reports
  }

  /** Whether the command line names one of these flags (not its default): `--name`, `--name=…`, or `-n` for a letter. */
  private given(...names: string[]): boolean {
    return this.argv.some((arg) =>
      names.some((name) => new RegExp(`^${name.length === 1 ? '-' : '--'}${name}(=|$)`).test(arg)),
    )
  }

  protected render(result: BenchResult): string {
    if ('previewPrice' in result) {
      const m = result.machine
      return `${previewPriceMarkdown(result.previewPrice, `${m.cpus} × ${m.cpuModel}, PostgreSQL ${m.postgres}, ${m.date}`)}${result.written.length ? `\nWrote ${result.written.join(', ')}` : ''}`
    }
    if ('lineageDelivery' in result) {
      const m = result.machine
      return `${lineageDeliveryMarkdown(result.lineageDelivery, {rounds: result.rounds, wait: undefined}, `${m.cpus} × ${m.cpuModel}, PostgreSQL ${m.postgres}, ${m.date}`)}${result.written.length ? `\nWrote ${result.written.join(', ')}` : ''}`
    }
    if ('previewEvents' in result) {
      const m = result.machine
      return `${previewEventsMarkdown(result.previewEvents, `${m.cpus} × ${m.cpuModel}, PostgreSQL ${m.postgres}, ${m.date}`)}${result.written.length ? `\nWrote ${result.written.join(', ')}` : ''}`
    }
    if ('explainAll' in result) {
      const m = result.machine
      return `${explainAllMarkdown(result.explainAll, `${m.cpus} × ${m.cpuModel}, PostgreSQL ${m.postgres}, ${m.date}`)}${result.written.length ? `\nWrote ${result.written.join(', ')}` : ''}`
    }
    if ('scale' in result)
      return `${result.growth ? `${growthMarkdown(result.growth).join('\n')}\n\n` : ''}${scaleMarkdown(result.scale, result.machine)}${result.written.length ? `\nWrote ${result.written.join(', ')}` : ''}`
    return `${benchTerminal(result)}\n\n${benchMarkdown(result).split('\n').slice(0, 2).join('\n')}${result.written.length ? `\nWrote ${result.written.join(', ')}` : ''}`
  }
}

type BenchFlags = Interfaces.InferredFlags<typeof Bench.flags>

/** --queue-sizes: whole numbers, `k` for thousands. */
function parseQueueSizes(text: string): number[] {
  return text.split(',').map((part) => {
    const match = /^\s*(\d+)(k?)\s*$/i.exec(part)
    if (!match || Number(match[1]) <= 0) throw usageError(`--queue-sizes takes sizes like 1k,10k,100k (got ${part}).`)
    return Number(match[1]) * (match[2] ? 1000 : 1)
  })
}

/** What the lock-hold, throughput, race, memory and stamp runs measure; --quick is a smoke run. */
function benchPlan(flags: BenchFlags) {
  const quick = flags.quick
  return {
    outlets: quick ? [0, 10] : parseIntegerList(flags.outlets, '--outlets'),
    runs: quick ? 2 : flags.runs,
    warmup: quick ? 1 : flags.warmup,
    consumers: flags.consumers,
    concurrency: quick ? [2] : parseIntegerList(flags.concurrency, '--concurrency'),
    throughputOutlets: quick ? [10] : parseIntegerList(flags['throughput-outlets'], '--throughput-outlets'),
    throughputItems: quick ? 20 : flags['throughput-items'],
    throughputRounds: quick ? 1 : 3,
    racers: quick ? 4 : flags.race,
    memoryTis: quick ? 0 : flags['memory-tis'],
    memoryEvents: quick ? 0 : flags['memory-events'],
    stampRuns: quick ? 2 : flags['stamp-runs'],
    stampHoldMs: quick ? 300 : flags['stamp-hold'],
    lineageItems: quick ? 10 : flags['lineage-items'],
    lineageCollectorMs: flags['lineage-collector-ms'] ?? 1000,
  }
}
