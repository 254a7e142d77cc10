import {AirlockCommand, type CommandOutcome} from '../src/cli/baseCommand.js'

export default class Version extends AirlockCommand<{version: string; node: string; platform: string}> {
  static override summary = 'Print the airlock version (the same as --version or -v).'
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version --json']

  protected async execute(): Promise<CommandOutcome<{version: string; node: string; platform: string}>> {
    await this.parse(Version)
    return {
      result: {
        version: this.config.version,
        node: process.version,
        platform: `${this.config.platform}-${this.config.arch}`,
      },
    }
  }

  protected render(): string {
    return this.config.userAgent
  }
}
