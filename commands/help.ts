import {Args, loadHelpClass} from '@oclif/core'

import {AirlockCommand, type CommandOutcome} from '../src/cli/baseCommand.js'

export default class Help extends AirlockCommand<null> {
  static override summary = 'Show help for airlock or one of its commands (the same as --help).'
  static override args = {
    command: Args.string({description: 'The command, e.g. complete or "sandbox start".', required: false}),
  }
  static override strict = false
  static override examples = ['<%= config.bin %> help', '<%= config.bin %> help complete']

  protected async execute(): Promise<CommandOutcome<null>> {
    const {argv} = await this.parse(Help)
    const HelpClass = await loadHelpClass(this.config)
    await new HelpClass(this.config).showHelp(argv as string[])
    return {result: null}
  }

  protected render(): string {
    return ''
  }
}
