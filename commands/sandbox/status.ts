import {AirlockCommand, type CommandOutcome} from '../../src/cli/baseCommand.js'
import {describeSandbox} from '../../src/cli/renderSandbox.js'
import {sandboxHome, sandboxStatus, type StatusResult} from '../../src/sandbox/sandbox.js'

export default class SandboxStatus extends AirlockCommand<StatusResult> {
  static override summary = 'Show whether the sandbox exists and runs, and where its data and log are.'
  static override examples = ['<%= config.bin %> sandbox status', '<%= config.bin %> sandbox status --json']

  protected async execute(): Promise<CommandOutcome<StatusResult>> {
    await this.parse(SandboxStatus)
    return {result: await sandboxStatus(sandboxHome())}
  }

  protected render(result: StatusResult): string {
    if (!result.created) return `No sandbox in ${result.home} (airlock sandbox start creates one).`
    return describeSandbox(result)
  }
}
