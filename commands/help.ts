import {Args, loadHelpClass} from '@oclif/core'

import {AirlockCommand, type CommandOutcome} from '../src/cli/baseCommand.js'
import {unknownHelpSubject} from '../src/cli/commandNotFound.js'

export default class Help extends AirlockCommand<null> {
  static override summary = 'Show help for airlock or one of its commands (the same as --help).'
  static override args = {
    command: Args.string({description: 'The command, e.g. complete or "sandbox start".', required: false}),
  }
  static override strict = false
  static override examples = ['<%= config.bin %> help', '<%= config.bin %> help complete']

  protected async execute(): Promise<CommandOutcome<null>> {
    const {argv} = await this.parse(Help)
    // oclif's help throws a plain error for a command it does not know (exit 1, "a bug"): a
    // mistyped name is a usage error with the nearest commands, as it is without `help`.
    const unknown = unknownHelpSubject(
      this.config,
      (argv as string[]).filter((arg) => !arg.startsWith('-')),
    )
    if (unknown) throw unknown
    const HelpClass = await loadHelpClass(this.config)
    await new HelpClass(this.config).showHelp(argv as string[])
    return {result: null}
  }

  protected render(): string {
    return ''
  }
}
