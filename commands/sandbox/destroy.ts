import {AirlockCommand, type CommandOutcome} from '../../src/cli/baseCommand.js'
import {destroySandbox, sandboxHome, type DestroyResult} from '../../src/sandbox/sandbox.js'
import {prose} from '../../src/cli/prose.js'

export default class SandboxDestroy extends AirlockCommand<DestroyResult> {
  static override summary = 'Stop the sandbox; remove its data and its copy of the PostgreSQL binaries.'
  static override description = prose(`Stops the sandbox server, then removes its cluster (in the airlock home, or under
/var/tmp when airlock runs as root), its state file and, as root, the copy of the PostgreSQL
binaries airlock made for PostgreSQL's own user. A copy a running server still executes from
(another sandbox, a test cluster) is kept and named. Destroying no sandbox is a no-op.`)

  static override examples = ['<%= config.bin %> sandbox destroy']

  protected async execute(): Promise<CommandOutcome<DestroyResult>> {
    await this.parse(SandboxDestroy)
    return {result: await destroySandbox(sandboxHome())}
  }

  protected render(result: DestroyResult): string {
    const head =
      result.action === 'destroyed'
        ? 'Destroyed the sandbox (airlock sandbox start creates a new one).'
        : 'There was no sandbox to destroy.'
    return [
      head,
      ...result.removed.map((item) => `  removed ${item}`),
      ...result.kept.map((item) => `  kept ${item}`),
    ].join('\n')
  }
}
