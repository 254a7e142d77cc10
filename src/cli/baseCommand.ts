import {Command, Flags, type Interfaces} from '@oclif/core'

import {AirlockError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {redact} from '../connection/url.js'

/** What a command hands back: the result that becomes `--json`'s `result`, and its exit code. */
export interface CommandOutcome<R> {
  result: R
  exit?: ExitCode
}

export interface ErrorEnvelope {
  status: number
  error: {name: string; code: string; message: string; actions: string[]}
}

export interface SuccessEnvelope<R> {
  status: number
  result: R
  warnings: string[]
}

/**
 * The one base command (DESIGN §3). It owns the `--json` envelope, the exit-code table and the
 * error text. oclif's own `--json` support is not used: in oclif 4 it reports every failure as
 * exit 1 and prints its config on parse errors, so this class parses, runs, renders and sets
 * process.exitCode itself, and never lets an error reach oclif's handler.
 */
export abstract class AirlockCommand<R> extends Command {
  static override baseFlags = {
    json: Flags.boolean({
      description: 'Print one JSON envelope on stdout ({"status","result","warnings"} or {"status","error"}); logs stay on stderr.',
      helpGroup: 'OUTPUT',
    }),
  }

  private readonly collectedWarnings: string[] = []
  /** Secrets (passwords) to scrub from anything printed; connection helpers add to it. */
  protected readonly secrets = new Set<string>()
  private readonly cleanups: Array<() => Promise<void>> = []

  /** Parse flags, do the work, return the result. Throw AirlockError for what the operator can fix. */
  protected abstract execute(): Promise<CommandOutcome<R>>

  /** The human rendering of the result, written to stdout when --json is off. */
  protected abstract render(result: R): string

  protected get jsonMode(): boolean {
    return this.argv.includes('--json')
  }

  /** A warning: in the envelope under --json, on stderr otherwise. */
  protected note(message: string): void {
    this.collectedWarnings.push(message)
    if (!this.jsonMode) process.stderr.write(`warning: ${this.scrub(message)}\n`)
  }

  /** A warning the human rendering already shows: only recorded for the envelope. */
  protected recordWarning(message: string): void {
    this.collectedWarnings.push(message)
  }

  /** Progress and log lines: always stderr, never under --json. */
  protected progress(message: string): void {
    if (!this.jsonMode) process.stderr.write(`${this.scrub(message)}\n`)
  }

  protected onCleanup(cleanup: () => Promise<void>): void {
    this.cleanups.push(cleanup)
  }

  protected scrub(text: string): string {
    return redact(text, this.secrets)
  }

  /**
   * oclif's parse, with every failure in it (unknown flag, bad integer, failed option check,
   * a flag's own parse function) turned into a one-line usage error: exit 2, never exit 1.
   */
  protected override async parse<F extends Interfaces.OutputFlags<any>, B extends Interfaces.OutputFlags<any>, A extends Interfaces.OutputArgs<any>>(
    options?: Interfaces.Input<F, B, A>,
    argv?: string[],
  ): Promise<Interfaces.ParserOutput<F, B, A>> {
    try {
      return await super.parse(options, argv)
    } catch (error) {
      if (error instanceof AirlockError) throw error
      const first = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').replace(/See more help with --help/i, '').trim()
      throw new AirlockError('USAGE', ExitCode.usage, `${first} (see airlock ${this.id?.replaceAll(':', ' ') ?? ''} --help)`)
    }
  }

  public async run(): Promise<void> {
    let exit: ExitCode
    try {
      const outcome = await this.execute()
      exit = outcome.exit ?? ExitCode.ok
      if (this.jsonMode) {
        const envelope: SuccessEnvelope<R> = {status: exit, result: outcome.result, warnings: this.collectedWarnings}
        this.writeStdout(JSON.stringify(envelope))
      } else {
        const text = this.render(outcome.result)
        if (text) this.writeStdout(text)
      }
    } catch (error) {
      exit = this.reportError(error)
    } finally {
      for (const cleanup of this.cleanups.reverse()) await cleanup().catch(() => undefined)
    }

    process.exitCode = exit
  }

  private reportError(error: unknown): ExitCode {
    const envelope = this.toErrorEnvelope(error)
    if (this.jsonMode) {
      this.writeStdout(JSON.stringify(envelope))
    } else {
      const lines = [`Error: ${envelope.error.message}`, ...envelope.error.actions.map((action) => `  → ${action}`)]
      process.stderr.write(lines.join('\n') + '\n')
      if (envelope.error.code === 'INTERNAL' && process.env.AIRLOCK_DEBUG && error instanceof Error) {
        process.stderr.write(this.scrub(String(error.stack)) + '\n')
      }
    }

    return envelope.status as ExitCode
  }

  private toErrorEnvelope(error: unknown): ErrorEnvelope {
    if (error instanceof AirlockError) {
      return {
        status: error.exit,
        error: {name: error.name, code: error.code, message: this.scrub(error.message), actions: error.actions.map((a) => this.scrub(a))},
      }
    }

    const message = error instanceof Error ? error.message : String(error)
    return {
      status: ExitCode.internal,
      error: {
        name: 'InternalError',
        code: 'INTERNAL',
        message: this.scrub(`Unexpected failure (a bug in airlock): ${message}`),
        actions: ['Re-run with AIRLOCK_DEBUG=1 for the stack trace and report it.'],
      },
    }
  }

  private writeStdout(text: string): void {
    process.stdout.write(text.endsWith('\n') ? text : text + '\n')
  }
}

export type InferredFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof AirlockCommand)['baseFlags'] & T['flags']>
