import {Flags} from '@oclif/core'

import {AirlockCommand, type CommandOutcome} from '../../src/cli/baseCommand.js'
import {renderKeyValues} from '../../src/output/table.js'
import {sandboxHome, seedSandbox, type SeedSandboxResult} from '../../src/sandbox/sandbox.js'
import {defaultSeed} from '../../src/worlds/seed.js'
import {prose} from '../../src/cli/prose.js'

export default class SandboxSeed extends AirlockCommand<SeedSandboxResult> {
  static override summary = 'Fill the sandbox with an Airflow-shaped world: DAGs, runs, tasks, assets.'
  static override description =
    prose(`Producer DAGs etl_NNN (owners, --runs running dag runs each, --tasks task instances per run,
--outlets active outlet assets per task, one of them inactive) and consumer DAGs report_NNN
scheduled on those assets by id, name, uri and through the alias lake.daily_alias; the last
consumer is paused. In etl_001's first run task_2 is already success and task_3 up_for_retry,
so airlock complete shows every outcome. Set-based inserts: 100 000 task instances take seconds.`)

  static override examples = [
    '<%= config.bin %> sandbox seed',
    '<%= config.bin %> sandbox seed --reset --dags 100 --runs 10 --tasks 100 --outlets 10',
    '<%= config.bin %> sandbox seed --reset --dags 1 --runs 1 --tasks 1 --outlets 600',
  ]

  static override flags = {
    dags: Flags.integer({description: 'Producer DAGs.', default: defaultSeed.dags, min: 0, max: 1_000_000}),
    runs: Flags.integer({
      description: 'Running dag runs per producer DAG.',
      default: defaultSeed.runs,
      min: 0,
      max: 1_000_000,
    }),
    tasks: Flags.integer({
      description: 'Tasks (task instances per run) per producer DAG.',
      default: defaultSeed.tasks,
      min: 0,
      max: 1_000_000,
    }),
    outlets: Flags.integer({
      description: 'Outlet assets per task (K).',
      default: defaultSeed.outlets,
      min: 0,
      max: 1_000_000,
    }),
    consumers: Flags.integer({
      description: 'Consumer DAGs scheduled on the assets (the last is paused).',
      default: defaultSeed.consumers,
      min: 0,
      max: 1_000_000,
    }),
    reset: Flags.boolean({description: 'Empty the sandbox database first (airlock sandbox reset).'}),
  }

  protected async execute(): Promise<CommandOutcome<SeedSandboxResult>> {
    const {flags} = await this.parse(SandboxSeed)
    const {dags, runs, tasks, outlets, consumers} = flags
    return {result: await seedSandbox(sandboxHome(), {dags, runs, tasks, outlets, consumers}, flags.reset)}
  }

  protected render(result: SeedSandboxResult): string {
    const s = result.seeded
    return `Seeded the sandbox (Airflow ${result.airflowVersion} schema, 127.0.0.1:${result.port}):\n${renderKeyValues([
      ['producer DAGs', s.dags],
      ['consumer DAGs', `${s.consumerDags} (${s.pausedConsumers} paused)`],
      ['dag runs', s.dagRuns],
      ['task instances', `${s.taskInstances} (${s.runningTaskInstances} running)`],
      ['outlet assets', `${s.assets} (${s.activeAssets} active)`],
      ['schedule references', s.scheduleReferences],
    ])}`
  }
}
