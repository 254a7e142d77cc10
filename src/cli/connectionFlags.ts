import {Flags} from '@oclif/core'

import {releasedLines} from '../airflow/revisions.js'
import {environmentNames, environments} from '../connection/environments.js'
import {openDatabase, type OpenedDatabase} from '../connection/open.js'
import type {ResolvedConnection} from '../connection/profiles.js'
import {resolveConnection} from '../connection/resolve.js'
import {passwordOf} from '../connection/url.js'
import type {OpenOptions} from '../engine/engine.js'
import {parseDuration} from './parseInput.js'
import {sandboxHome, sandboxUrl} from '../sandbox/sandbox.js'

/** The connection flags every database command takes. */
export const connectionFlags = {
  'database-url': Flags.string({
    description:
      'PostgreSQL URL of the Airflow metadata database (postgresql://user:pass@host:5432/airflow; postgresql+psycopg2:// is accepted). Overrides every other setting.',
    helpGroup: 'CONNECTION',
  }),
  profile: Flags.string({
    // The file is not read here: listing its profiles would make every start-up pay for it.
    description: `A connection profile: a [profiles.NAME] of the configuration file (AIRLOCK_CONFIG, else ~/.config/airlock/config.toml), else a built-in one (${environmentNames.join(', ')}). Also AIRLOCK_PROFILE.`,
    helpGroup: 'CONNECTION',
    helpValue: 'NAME',
    exclusive: ['env'],
  }),
  // --embedded excludes --env from --env's side: oclif's usage line folds --env into --profile's
  // group, and a flag named again in --embedded's list rendered as an empty alternative
  // (`[--embedded | … | [--profile NAME | --env NAME] | ]`). oclif checks the exclusive list of
  // every flag given, so either side refuses the pair.
  env: Flags.string({
    description: 'Deprecated: use --profile, which takes the same names.',
    helpGroup: 'CONNECTION',
    helpValue: 'NAME',
    exclusive: ['embedded'],
  }),
  embedded: Flags.boolean({
    description: 'Use the local embedded sandbox, starting it if needed (see airlock sandbox --help).',
    helpGroup: 'CONNECTION',
    exclusive: ['database-url', 'profile'],
  }),
  'connect-timeout': Flags.string({
    description:
      'How long the server may take to answer (500ms, 10s, 1m): a new connection, and a statement before airlock asks, on a new connection, whether the server is still there. No answer to that either means the path is silent: the run stops (a batch takes no new item) and exits 7, about twice this after the path froze (the freeze bound, docs/connection.md), never in proportion to the items left. A slow statement on a server that answers runs on to its statement timeout. Also AIRLOCK_CONNECT_TIMEOUT.',
    env: 'AIRLOCK_CONNECT_TIMEOUT',
    default: '10s',
    helpGroup: 'CONNECTION',
    helpValue: 'DURATION',
  }),
  'assume-version': Flags.string({
    description: `For an alembic head airlock does not know (a patch release newer than airlock): treat the database as the newest release airlock knows of this Airflow line (${releasedLines.join(', ')}). airlock still checks every column it depends on and refuses a mismatch; ignored when airlock knows the head.`,
    env: 'AIRLOCK_ASSUME_VERSION',
    helpGroup: 'CONNECTION',
    helpValue: 'X.Y',
    parse: (input) =>
      /^v?\d+\.\d+$/.test(input.trim())
        ? Promise.resolve(input.trim().replace(/^v/, ''))
        : Promise.reject(
            new Error(
              `expected an Airflow release line such as 3.2 (from --assume-version or AIRLOCK_ASSUME_VERSION), got "${input}"`,
            ),
          ),
  }),
}

export interface ConnectionFlagValues {
  'database-url'?: string | undefined
  profile?: string | undefined
  env?: string | undefined
  embedded?: boolean | undefined
  'connect-timeout'?: string | undefined
  'assume-version'?: string | undefined
}

/** Resolves and opens the connection the flags and environment ask for; `notes` says what it did (started the sandbox, …). */
export async function openFromFlags(
  flags: ConnectionFlagValues,
  options: OpenOptions,
  remember: (secret: string) => void,
): Promise<OpenedDatabase & {notes: string[]}> {
  const notes: string[] = []
  // Read before anything starts (the sandbox included): a bad value is exit 2 with nothing done.
  const connectTimeoutMs =
    flags['connect-timeout'] === undefined
      ? options.connectTimeoutMs
      : parseDuration(flags['connect-timeout'], '--connect-timeout (or AIRLOCK_CONNECT_TIMEOUT)', 600_000)
  let connection: ResolvedConnection
  if (flags.embedded) {
    const {url, started} = await sandboxUrl(sandboxHome())
    if (started.action !== 'already_running') notes.push(`sandbox ${started.action} on 127.0.0.1:${started.port}`)
    connection = {url, source: 'embedded sandbox'}
  } else {
    const warn = options.warn ?? ((message: string) => notes.push(message))
    connection = await resolveConnection(
      {databaseUrl: flags['database-url'], profile: flags.profile, env: flags.env},
      process.env,
      environments,
      warn,
    )
  }

  const password = passwordOf(connection.url)
  if (password) remember(password)
  return {
    ...(await openDatabase(connection, {
      // Every command's advice for a server without a free slot names the flag that sizes the pool.
      poolSizeName: '--concurrency',
      ...options,
      ...(connectTimeoutMs === undefined ? {} : {connectTimeoutMs}),
      warn: options.warn ?? ((message) => notes.push(message)),
    })),
    notes,
  }
}
