import {renderTable} from '../output/table.js'
import type {CpuPerItem} from './cpuTime.js'
import type {LineageDeliveryRow} from './lineageDelivery.js'
import type {BenchReport} from './runBench.js'
import type {ScaleReport} from './scale.js'

const f = (v: number, digits = 2) => (Number.isFinite(v) ? v.toFixed(digits) : '-')

/** The benchmark as markdown: machine, lock hold side by side, registration, throughput, race, memory. */
export function benchMarkdown(report: BenchReport): string {
  const m = report.machine
  const lines = [
    `Measured ${m.date} on ${m.cpus} × ${m.cpuModel}, ${m.memoryGb} GiB, Node ${m.node}, PostgreSQL ${m.postgres} on loopback, synchronous_commit=${m.synchronousCommit}.`,
    `${report.plan.runs} runs per point after ${report.plan.warmup} warm-up runs, ${report.plan.consumers} consumer DAG(s) per asset; the three strategies interleaved run by run.`,
    ...lockHoldSection(report),
    ...throughputSection(report),
    ...raceSection(report),
    ...stampToCommitSection(report),
    ...memorySection(report),
    ...lineageSection(report),
  ]
  return lines.join('\n') + '\n'
}

function lockHoldSection(report: BenchReport): string[] {
  return [
    '',
    '### task_instance row lock held during one completion (ms)',
    '',
    markdownTable(
      [
        'outlets',
        'lock-first p50',
        'register-first p50',
        'p95',
        'p99',
        'raw floor p50',
        'register-first / floor',
        'lock-first / register-first',
      ],
      report.lockHold.map((row) => [
        String(row.outlets),
        f(row.lockHold.lock_first.p50),
        f(row.lockHold.register_first.p50),
        f(row.lockHold.register_first.p95),
        f(row.lockHold.register_first.p99),
        f(row.lockHold.floor.p50),
        `${f(row.lockHold.register_first.p50 / row.lockHold.floor.p50)}×`,
        `${f(row.lockHold.lock_first.p50 / row.lockHold.register_first.p50, 1)}×`,
      ]),
    ),
    '',
    '### Registration and whole-completion time (ms, p50 / p95)',
    '',
    markdownTable(
      ['outlets', 'register (register-first)', 'register (raw floor)', 'total register-first', 'total lock-first'],
      report.lockHold.map((row) => [
        String(row.outlets),
        `${f(row.register.register_first.p50)} / ${f(row.register.register_first.p95)}`,
        `${f(row.register.floor.p50)} / ${f(row.register.floor.p95)}`,
        `${f(row.total.register_first.p50)} / ${f(row.total.register_first.p95)}`,
        `${f(row.total.lock_first.p50)} / ${f(row.total.lock_first.p95)}`,
      ]),
    ),
  ]
}

function throughputSection(report: BenchReport): string[] {
  if (report.throughput.length === 0) return []
  const outlets = [...new Set(report.throughput.map((t) => t.outlets))]
  const concurrency = [...new Set(report.throughput.map((t) => t.concurrency))]
  return [
    '',
    `### Throughput on distinct task instances (completions/s, medians of ${report.throughput[0]!.rounds} rounds after a warm-up; the raw floor and the ratio to it)`,
    '',
    markdownTable(
      ['outlets', ...concurrency.map((c) => `concurrency ${c}`)],
      outlets.map((o) => [
        String(o),
        ...concurrency.map((c) => {
          const row = report.throughput.find((t) => t.outlets === o && t.concurrency === c)
          if (!row) return '-'
          const floor = row.floorPerSecond
          if (!floor) return f(row.perSecond, 0)
          const bare = row.noDownstreamPerSecond
          const withoutPreview = bare ? `; --no-downstream ${f(bare, 0)}, ${f(bare / floor, 2)}×` : ''
          return `${f(row.perSecond, 0)} (${f(row.perSecond / floor, 2)}× floor ${f(floor, 0)}${withoutPreview})`
        }),
      ]),
    ),
    ...cpuSection(report),
    ...firstBatchSection(report),
  ]
}

/** CPU per completion as the tables print it: client / PostgreSQL (ms), `-` when the server's is unknown. */
const cpuCell = (cpu: CpuPerItem) => `${f(cpu.clientMs)} / ${cpu.serverMs === null ? '-' : f(cpu.serverMs)}`

/** The warm-up batches: a process's first batch, V8 still compiling, beside the floor's. */
function firstBatchSection(report: BenchReport): string[] {
  const rows = report.throughput
  if (rows.length === 0) return []
  return [
    '',
    "### A process's first batch (the warm-up: completions/s, the ratio to the floor's first batch, CPU per completion client / PostgreSQL)",
    '',
    markdownTable(
      ['outlets', 'concurrency', 'complete', 'raw floor', 'ratio'],
      rows.map((row) => [
        String(row.outlets),
        String(row.concurrency),
        `${f(row.firstBatch.complete, 0)} (${cpuCell(row.firstBatch.cpu.complete)})`,
        `${f(row.firstBatch.floor, 0)} (${cpuCell(row.firstBatch.cpu.floor)})`,
        `${f(row.firstBatch.complete / row.firstBatch.floor, 2)}×`,
      ]),
    ),
  ]
}

/** Where the time between complete and its floor goes: CPU per completion, client and server. */
function cpuSection(report: BenchReport): string[] {
  const rows = report.throughput
  if (rows.length === 0) return []
  return [
    '',
    '### CPU per completion (ms, client / PostgreSQL; medians of the rounds; PostgreSQL only when it runs on this machine)',
    '',
    markdownTable(
      ['outlets', 'concurrency', 'complete', '--no-downstream', 'raw floor'],
      rows.map((row) => [
        String(row.outlets),
        String(row.concurrency),
        cpuCell(row.cpu.complete),
        cpuCell(row.cpu.noDownstream),
        cpuCell(row.cpu.floor),
      ]),
    ),
  ]
}

function raceSection(report: BenchReport): string[] {
  const r = report.race
  if (!r) return []
  return [
    '',
    `### Same-task-instance race`,
    '',
    `${r.racers} concurrent completions of one task instance (${r.outlets} outlets): ${f(r.ms, 0)} ms until all had an outcome; ${r.completed} completed, ${r.alreadySuccess} already_success, ${r.events} events in the table.`,
  ]
}

function stampToCommitSection(report: BenchReport): string[] {
  if (report.stampToCommit.length === 0) return []
  return [
    '',
    '### Event-to-commit window (ms from the first registration statement to COMMIT, 10 outlets)',
    '',
    markdownTable(
      ['row lock', 'lock wait', 'p50', 'p95', 'p99', 'n'],
      report.stampToCommit.map((row) => [
        row.contention === 'none' ? 'free' : `held ${row.holdMs} ms by another session`,
        row.waiting === 'sliced' ? 'in 200 ms slices (airlock)' : 'one wait (before slices)',
        f(row.stampToCommit.p50),
        f(row.stampToCommit.p95),
        f(row.stampToCommit.p99),
        String(row.stampToCommit.n),
      ]),
    ),
  ]
}

function memorySection(report: BenchReport): string[] {
  if (report.memory.length === 0) return []
  return [
    '',
    '### Peak memory (RSS of the airlock process)',
    '',
    markdownTable(
      ['run', 'peak RSS', 'time'],
      report.memory.map((run) => [run.what, `${f(run.peakRssMb, 0)} MB`, `${f(run.seconds, 0)} s`]),
    ),
  ]
}

function lineageSection(report: BenchReport): string[] {
  if (!report.lineage?.length) return []
  return ['', '### Lineage delivery (complete, --ndjson, concurrency 4)', '', lineageDeliveryTable(report.lineage)]
}

/** `bench --world lineage-delivery`: what a slow collector adds to a short run, medians over the rounds. */
export function lineageDeliveryMarkdown(
  rows: readonly LineageDeliveryRow[],
  options: {rounds: number; wait: string | undefined},
  caption: string,
): string {
  return [
    `## Lineage delivery: what a slow collector adds to a run`,
    '',
    `complete over ${rows[0]?.items ?? 0} task instances (the built CLI, --ndjson, concurrency 4), ` +
      `--lineage-wait ${options.wait ?? 'at its default'}; medians of ${options.rounds} round${options.rounds === 1 ? '' : 's'}. ${caption}.`,
    '',
    lineageDeliveryTable(rows),
    '',
  ].join('\n')
}

function lineageDeliveryTable(rows: readonly LineageDeliveryRow[]): string {
  return markdownTable(
    [
      'lineage',
      'items',
      'completions/s (to the last item)',
      'process',
      'extra over off',
      'most POSTs at once',
      'COMPLETE events',
    ],
    rows.map((row) => [
      row.collector === 'off'
        ? 'off (--no-lineage)'
        : row.collector === 0
          ? 'collector answering at once'
          : `collector answering in ${f(row.collector / 1000, 1)} s`,
      String(row.items),
      f(row.perSecond, 0),
      `${f(row.processSeconds, 1)} s`,
      row.collector === 'off' ? '—' : `${f(Math.abs(row.extraSeconds) < 0.05 ? 0 : row.extraSeconds, 1)} s`,
      row.collector === 'off' ? '—' : String(row.maxInFlight),
      row.lineage
        ? Object.entries(row.lineage)
            .filter(([, n]) => n > 0)
            .map(([kind, n]) => `${n} ${kind.replaceAll('_', ' ')}`)
            .join(', ')
        : '—',
    ]),
  )
}

export function markdownTable(headers: string[], rows: string[][]): string {
  return [
    `| ${headers.join(' | ')} |`,
    `|${headers.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n')
}

/** A short terminal rendering of the lock-hold table. */
export function benchTerminal(report: BenchReport): string {
  return renderTable(
    ['outlets', 'lock-first p50', 'register-first p50', 'floor p50', 'rf/floor', 'register p50'],
    report.lockHold.map((row) => [
      row.outlets,
      f(row.lockHold.lock_first.p50),
      f(row.lockHold.register_first.p50),
      f(row.lockHold.floor.p50),
      f(row.lockHold.register_first.p50 / row.lockHold.floor.p50),
      f(row.register.register_first.p50),
    ]),
  )
}

/** `bench --scale` as markdown: the world, each command over it, what the audit found, the plans. */
export function scaleMarkdown(report: ScaleReport, machine: BenchReport['machine']): string {
  const w = report.world
  const n = (v: number) => Math.round(v).toLocaleString('en-US')
  const lines = [
    `Measured ${machine.date} on ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGb} GiB, Node ${machine.node}, PostgreSQL ${machine.postgres} on loopback.`,
    `World: ${n(w.taskInstances)} task instances in ${n(w.dags)} DAGs (20 runs of 10 tasks each), ${n(w.events)} asset events, Airflow's own indexes only; seeded set-based in ${f(w.seedSeconds, 0)} s.`,
    '',
    '### Commands over it (each a child process, as an operator runs it)',
    '',
    markdownTable(
      ['command', 'time', 'rows/s', 'peak RSS', 'exit'],
      report.commands.map((c) => [
        c.what,
        `${f(c.seconds, 1)} s`,
        n(c.rowsPerSecond),
        `${f(c.peakRssMb, 0)} MB`,
        String(c.exitCode),
      ]),
    ),
    '',
    `export-events beside its floor, one \`COPY (the same lines) TO STDOUT\` streamed to a file by pg-copy-streams in the bench's own process, run right after it: ${f(report.exportFloor.exportSeconds, 1)} s against ${f(report.exportFloor.floorSeconds, 1)} s for ${n(report.exportFloor.lines)} lines, ${f(report.exportFloor.exportSeconds / report.exportFloor.floorSeconds, 2)}× the floor.`,
    '',
    `explain --all beside its floor, a plain scan of the queue and of dag_schedule_asset_reference printed as JSON lines, both child processes (start-up included): ${f(report.explainFloor.explainSeconds, 2)} s for the whole command over ${n(report.explainFloor.rows)} queue rows against ${f(report.explainFloor.scanSeconds, 2)} s for the floor, ${f(report.explainFloor.explainSeconds / report.explainFloor.scanSeconds, 2)}×.`,
    '',
    '### What the audit found against what was planted',
    '',
    markdownTable(
      ['class', 'found', 'planted'],
      (
        [
          ['duplicate', report.audit.planted.duplicates],
          ['missing_events', report.audit.planted.missing],
          ['orphan_missing_ti', report.audit.planted.orphans],
          ['superseded_by_rerun', report.audit.planted.superseded],
        ] as const
      ).map(([cls, planted]) => [cls, n(report.audit.counts[cls] ?? 0), n(planted)]),
    ),
    '',
    '### EXPLAIN (ANALYZE) of the statements behind them',
    '',
    markdownTable(
      ['statement', 'time', 'sequential scans (rows)', 'indexes (loops)', 'why'],
      report.explain.map((e) => [
        e.what,
        `${f(e.ms, 1)} ms`,
        e.seqScans.map((scan) => `${scan.table} (${n(scan.rows)})`).join(', ') || 'none',
        [...e.indexes.reduce((m, i) => m.set(i.index, (m.get(i.index) ?? 0) + i.loops), new Map<string, number>())]
          .map(([index, loops]) => `${index} (${n(loops)})`)
          .join(', ') || 'none',
        e.why,
      ]),
    ),
  ]
  return lines.join('\n') + '\n'
}
