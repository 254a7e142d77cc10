import {AirlockCommand, type CommandOutcome} from '../../src/cli/baseCommand.js'
import {sandboxHome, stopSandbox, type StopResult} from '../../src/sandbox/sandbox.js'

export default class SandboxStop extends AirlockCommand<StopResult> {
  static override summary = 'Stop the embedded PostgreSQL sandbox (its data is kept).'
  static override description =
    'Stops the sandbox server with a fast shutdown (open sessions are rolled back). Stopping a stopped sandbox is a no-op.'
  static override examples = ['<%= config.bin %> sandbox stop']

  protected async execute(): Promise<CommandOutcome<StopResult>> {
    await this.parse(SandboxStop)
    return {result: await stopSandbox(sandboxHome())}
  }

  protected render(result: StopResult): string {
    return {
      stopped: 'Stopped the sandbox; its data is kept (airlock sandbox start brings it back).',
      already_stopped: 'The sandbox is already stopped.',
      not_created: 'There is no sandbox yet (airlock sandbox start creates one).',
    }[result.action]
  }
}
