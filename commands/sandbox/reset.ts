import {Flags} from '@oclif/core'

import {AirlockCommand, type CommandOutcome} from '../../src/cli/baseCommand.js'
import {describeSandbox} from '../../src/cli/renderSandbox.js'
import {fixtureVersions, parseFixtureVersion} from '../../src/worlds/fixtureSchema.js'
import {resetSandbox, sandboxHome, type ResetResult} from '../../src/sandbox/sandbox.js'
import {prose} from '../../src/cli/prose.js'

export default class SandboxReset extends AirlockCommand<ResetResult> {
  static override summary = 'Empty the sandbox database and rebuild its Airflow schema.'
  static override description =
    prose(`Drops the sandbox's "airflow" database (disconnecting its sessions) and recreates it with the
fixture schema of --airflow-version (default: the version it had). --hard deletes the whole
PostgreSQL cluster first, for a data directory that no longer starts.`)

  static override examples = [
    '<%= config.bin %> sandbox reset',
    '<%= config.bin %> sandbox reset --airflow-version 3.4',
    '<%= config.bin %> sandbox reset --hard',
  ]

  static override flags = {
    'airflow-version': Flags.string({description: 'Schema to rebuild.', options: [...fixtureVersions]}),
    hard: Flags.boolean({description: 'Delete and re-create the PostgreSQL cluster itself.'}),
  }

  protected async execute(): Promise<CommandOutcome<ResetResult>> {
    const {flags} = await this.parse(SandboxReset)
    const airflowVersion = flags['airflow-version'] ? parseFixtureVersion(flags['airflow-version']) : undefined
    return {result: await resetSandbox(sandboxHome(), {airflowVersion, hard: flags.hard})}
  }

  protected render(result: ResetResult): string {
    return `Reset the sandbox${result.hard ? ' (new cluster)' : ''}: an empty Airflow ${result.airflowVersion} schema.\n${describeSandbox(result)}`
  }
}
