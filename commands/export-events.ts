import {Flags} from '@oclif/core'

import {AirlockCommand, type CommandOutcome} from '../src/cli/baseCommand.js'
import {connectionFlags} from '../src/cli/connectionFlags.js'
import {closeOutputFile, newOutputName} from '../src/cli/outputFile.js'
import {requireAssets} from '../src/selection/assetFilter.js'
import {requireSourceDag} from '../src/selection/sourceDag.js'
import {eventFilterFlags, eventFilterFromFlags} from '../src/cli/eventFilterFlags.js'
import {usageError} from '../src/errors.js'
import {ExitCode} from '../src/exitCodes.js'
import {exportEvents} from '../src/export/exportEvents.js'
import {createProgress} from '../src/output/progress.js'
import {prose} from '../src/cli/prose.js'

interface ExportResult {
  exported: number
  output: string
  first_id: number | null
  last_id: number | null
}

export default class ExportEvents extends AirlockCommand<ExportResult> {
  static override summary = 'Write asset events (with their attribution) as NDJSON, e.g. from a backup.'
  static override description =
    prose(`One JSON object per line: id, asset {name, uri}, extra, source_dag_id / source_run_id /
source_task_id / source_map_index, partition_key, timestamp, the aliases it went through, the DAGs
queued for it (queued_for) and the runs that consumed it (consumed_by). Streamed in keyset pages:
an export of millions of events runs in flat memory. The usual recovery: restore last night's
backup into a scratch database, export the incident's window there, then
airlock replay-events --from-file … --skip-existing against production.`)

  static override examples = [
    {
      description: "An incident's two hours, from a restored backup (profile restored)",
      command:
        '<%= config.bin %> export-events --profile restored --since 2026-12-01T02:00:00Z --until 2026-12-01T04:00:00Z -o incident.ndjson',
    },
    {
      description: "One DAG's events of one asset, to stdout",
      command: '<%= config.bin %> export-events --dag-id etl_daily --asset s3://lake/orders > orders.ndjson',
    },
    "<%= config.bin %> export-events --since 26h -o 'events-{timestamp}.ndjson'",
  ]

  static override flags = {
    ...connectionFlags,
    ...eventFilterFlags,
    output: Flags.string({
      char: 'o',
      description:
        'Write to this new file instead of stdout (required with --json, where stdout holds the envelope). Never overwrites: for cron, put {timestamp} (UTC), {date} or {pid} in the name.',
      helpValue: 'FILE',
    }),
  }

  protected async execute(): Promise<CommandOutcome<ExportResult>> {
    const {flags} = await this.parse(ExportEvents)
    if (this.jsonMode && !flags.output)
      throw usageError('--json needs --output FILE: stdout carries the events otherwise.')
    const filter = eventFilterFromFlags(flags)
    const output = await newOutputName(flags.output)
    const airflow = await this.openAirflow(flags, {verb: 'export-events', poolSize: 1})
    if (filter.sourceDagId) await requireSourceDag(airflow, filter.sourceDagId)
    await requireAssets(airflow, filter.assets, '--asset')
    const file = output ? await this.openOutputFile(output) : undefined
    const out = file?.stream ?? this.stdoutStream
    const progress = createProgress({label: 'export-events', total: null, enabled: Boolean(output)})
    const result = await exportEvents(airflow, filter, out, (n) => progress.update(n, ''))
    progress.stop()
    if (file) await closeOutputFile(file)

    // On stdout the events are the output: the count goes to stderr.
    if (!file) {
      this.progress(
        result.readerClosed
          ? `the reader closed the output after ${result.exported} events were written to it (as \`| head\` does); the export stopped there`
          : `exported ${result.exported} events`,
      )
    }

    return {
      exit: this.exitUnlessEmpty(flags, result.exported === 0, 'no event matched', ExitCode.ok),
      result: {
        exported: result.exported,
        output: output ?? 'stdout',
        first_id: result.firstId,
        last_id: result.lastId,
      },
    }
  }

  protected render(result: ExportResult): string {
    if (result.output === 'stdout') return ''
    return `Exported ${result.exported} events to ${result.output}${result.exported ? ` (ids ${result.first_id}…${result.last_id})` : ''}.`
  }
}
