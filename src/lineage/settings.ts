import {readFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {AirflowConfigError, parseBoolean, readAirflowString} from '../airflow/config.js'
import {usageError} from '../errors.js'
import {parseEmissionPolicy, type EmissionRule} from './emissionPolicy.js'
import {defaultSendPolicy, type SendPolicy} from './send.js'

/** How a run delivers its COMPLETE events: the spool, how long it waits for them, the POST policy. */
export interface LineageDeliverySettings {
  /** The durable outbox: one file per event not yet confirmed. */
  spoolDir: string
  /** After the last completion, how long the run waits for events still being sent. */
  waitMs: number
  /** --lineage-required: a run whose events were not all confirmed exits 5. */
  required: boolean
  policy: SendPolicy
}

/**
 * The provider's controls on task events (apache-airflow-providers-openlineage conf.py
 * `disabled_operators`, `selective_enable`, `emission_policy`; plugins/listener.py
 * `_on_task_instance_success` resolves them with utils/emission_policy.py
 * `resolve_task_emission_policy` from 2.19.0: emissionPolicy.ts).
 */
export interface LineageFilters {
  /** Fully qualified operator class names, `;`-separated in the option. */
  disabledOperators: string[]
  selectiveEnable: boolean
  /** `[openlineage] emission_policy`'s valid rules; null when it is not a JSON array (the provider's defaults apply). */
  emissionPolicy: EmissionRule[] | null
}

/** Where COMPLETE events go, or why none are sent. */
export type LineageSettings =
  | {
      enabled: true
      url: string
      apiKey: string | undefined
      namespace: string
      source: string
      delivery: LineageDeliverySettings
      /** What the provider sends no COMPLETE for: `[openlineage] disabled_for_operators`, `selective_enable`, `emission_policy`. */
      filters: LineageFilters
      /** Said to the operator before the first item: emission_policy rules the provider ignores. */
      warnings: string[]
    }
  | {
      enabled: false
      reason: string
      /** Said to the operator: lineage is configured, but not in a way airlock sends. */ warning?: string
    }

/** An HTTP transport as the client's configuration writes it. */
interface HttpTransport {
  url: string
  endpoint: string
  apiKey: string | undefined
  /** The transport's `timeout` (seconds) and `retry` ({total, backoff_factor}), as written. */
  timeout?: unknown
  retry?: unknown
}

/**
 * The OpenLineage settings as Airflow's provider and the OpenLineage client read them
 * (providers/openlineage conf.py `namespace`, `is_disabled`, `config_path`, `transport`;
 * plugins/adapter.py `get_openlineage_config`; openlineage-python's config lookup), first found:
 *
 * 1. `--no-lineage`, `OPENLINEAGE_DISABLED`, `[openlineage] disabled`: off;
 * 2. `--openlineage-url`;
 * 3. `[openlineage] config_path` (a YAML file with `transport:`), then `[openlineage] transport`
 *    (JSON), as the provider prefers them to the client's defaults;
 * 4. the client's own: `OPENLINEAGE_CONFIG`, else `openlineage.yml` in the working directory,
 *    else `~/.openlineage/openlineage.yml`;
 * 5. `OPENLINEAGE_URL` (with `OPENLINEAGE_ENDPOINT`, default `api/v1/lineage`, and
 *    `OPENLINEAGE_API_KEY` as a Bearer token).
 *
 * Only the `http` transport is sent to; another type (kafka, console, file, …) turns lineage off
 * with that reason. The namespace is `[openlineage] namespace`, else `OPENLINEAGE_NAMESPACE`, else
 * `default`.
 */
/** An [openlineage] option, or exit 2 when airflow.cfg cannot be read (as schemaCheck's settings). */
function openlineageOption(key: string, env: NodeJS.ProcessEnv): {value: string; source: string} | undefined {
  return airflowConfig(() => readAirflowString('openlineage', key, env))
}

/** A read of Airflow's configuration, its refusal exit 2 as Airflow's own refusal to start. */
function airflowConfig<T>(read: () => T): T {
  try {
    return read()
  } catch (error) {
    if (error instanceof AirflowConfigError) throw usageError(`Airflow's configuration: ${error.message}.`)
    throw error
  }
}

export async function lineageSettings(
  flags: {
    openlineageUrl?: string | undefined
    lineage: boolean
    /** Where the spool is and how long a run waits: the caller's (its flags), never a default here. */
    delivery: Omit<LineageDeliverySettings, 'policy'>
  },
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): Promise<LineageSettings> {
  if (!flags.lineage) return {enabled: false, reason: '--no-lineage'}
  const truthy = (value: string | undefined) => ['true', '1', 't'].includes((value ?? '').trim().toLowerCase())
  if (truthy(env.OPENLINEAGE_DISABLED)) return {enabled: false, reason: 'OPENLINEAGE_DISABLED'}
  if (truthy(openlineageOption('disabled', env)?.value)) return {enabled: false, reason: '[openlineage] disabled'}
  const found = await findTransport(flags, env, cwd)
  if (!found) return {enabled: false, reason: 'no OpenLineage transport configured (OPENLINEAGE_URL, openlineage.yml)'}
  if ('unsupported' in found) {
    return {
      enabled: false,
      reason: found.unsupported,
      warning: `OpenLineage: ${found.unsupported}; no COMPLETE events are sent`,
    }
  }
  const namespace = openlineageOption('namespace', env)?.value || env.OPENLINEAGE_NAMESPACE || 'default'
  const {filters, warnings} = lineageFilters(env)
  return {
    enabled: true,
    url: endpointUrl(found, found.source),
    apiKey: found.apiKey,
    namespace,
    source: found.source,
    delivery: {
      ...flags.delivery,
      policy: sendPolicy(found, env),
    },
    filters,
    warnings,
  }
}

type Found = (HttpTransport & {source: string}) | {unsupported: string}

async function findTransport(
  flags: {openlineageUrl?: string | undefined},
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<Found | undefined> {
  const fromEnv = (url: string, source: string) => ({
    url,
    endpoint: env.OPENLINEAGE_ENDPOINT ?? 'api/v1/lineage',
    apiKey: env.OPENLINEAGE_API_KEY || undefined,
    source,
  })
  if (flags.openlineageUrl) return fromEnv(flags.openlineageUrl, '--openlineage-url')
  const configPath = openlineageOption('config_path', env)?.value
  if (configPath) return fromYamlFile(configPath, '[openlineage] config_path')
  const transport = openlineageOption('transport', env)
  if (transport?.value) {
    let parsed: unknown
    try {
      parsed = JSON.parse(transport.value)
    } catch {
      throw usageError(`[openlineage] transport (${transport.source}) is not JSON; Airflow's provider refuses it too.`)
    }
    return fromTransport(parsed, `[openlineage] transport (${transport.source})`)
  }
  for (const [file, source] of [
    ...(env.OPENLINEAGE_CONFIG ? [[env.OPENLINEAGE_CONFIG, 'OPENLINEAGE_CONFIG']] : []),
    [path.join(cwd, 'openlineage.yml'), 'openlineage.yml'],
    [path.join(os.homedir(), '.openlineage', 'openlineage.yml'), '~/.openlineage/openlineage.yml'],
  ] as Array<[string, string]>) {
    const found = await fromYamlFile(file, source, source !== 'OPENLINEAGE_CONFIG')
    if (found) return found
  }
  if (env.OPENLINEAGE_URL) return fromEnv(env.OPENLINEAGE_URL, 'OPENLINEAGE_URL')
  return undefined
}

/** The `transport:` of an OpenLineage YAML file; a file that is missing where it is optional is no answer. */
async function fromYamlFile(file: string, source: string, optional = false): Promise<Found | undefined> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    if (optional && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw usageError(`${source}: ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}).`)
  }
  let document: unknown
  try {
    document = (await import('yaml')).parse(text)
  } catch (error) {
    throw usageError(`${source}: ${file} is not YAML: ${error instanceof Error ? error.message.split('\n')[0] : ''}`)
  }
  const transport = (document as {transport?: unknown} | null)?.transport
  if (transport === undefined) return {unsupported: `${source} (${file}) has no transport`}
  return fromTransport(transport, `${source} (${file})`)
}

/** An http transport (`type: http`, `url`, `endpoint`, `auth: {type: api_key, apiKey}`); any other type is named. */
function fromTransport(transport: unknown, source: string): Found {
  const t = (transport ?? {}) as {
    type?: unknown
    url?: unknown
    endpoint?: unknown
    auth?: {type?: unknown; apiKey?: unknown; api_key?: unknown}
    timeout?: unknown
    retry?: unknown
  }
  if (t.type !== 'http')
    return {unsupported: `${source}: transport type ${JSON.stringify(t.type)} is not sent by airlock (http only)`}
  if (typeof t.url !== 'string' || !t.url) throw usageError(`${source}: the http transport has no url.`)
  const key = t.auth?.apiKey ?? t.auth?.api_key
  return {
    url: t.url,
    endpoint: typeof t.endpoint === 'string' ? t.endpoint : 'api/v1/lineage',
    apiKey: t.auth?.type === 'api_key' && typeof key === 'string' && key ? key : undefined,
    timeout: t.timeout,
    retry: t.retry,
    source,
  }
}

/**
 * The POST policy, from the transport's own settings as the OpenLineage client names them
 * (openlineage-python transport/http.py HttpConfig: `timeout` in seconds, default 5.0; `retry`
 * with `total` retries and `backoff_factor` in seconds), the environment's
 * `OPENLINEAGE__TRANSPORT__TIMEOUT`, `OPENLINEAGE__TRANSPORT__RETRY` (JSON),
 * `OPENLINEAGE__TRANSPORT__RETRY__TOTAL` and `…__BACKOFF_FACTOR` winning over the file, as the
 * client lets them. Unset: airlock's own (5 s, 2 retries, 0.2 s), so a backend that is down is
 * found in well under a second per event. A value that is not a number is exit 2.
 */
function sendPolicy(transport: HttpTransport & {source: string}, env: NodeJS.ProcessEnv): SendPolicy {
  const fromEnvJson = env.OPENLINEAGE__TRANSPORT__RETRY ? parseRetryJson(env.OPENLINEAGE__TRANSPORT__RETRY) : {}
  const retry = {...retryOf(transport.retry, transport.source), ...fromEnvJson}
  const timeout = env.OPENLINEAGE__TRANSPORT__TIMEOUT ?? transport.timeout
  const total = env.OPENLINEAGE__TRANSPORT__RETRY__TOTAL ?? retry.total
  const backoff = env.OPENLINEAGE__TRANSPORT__RETRY__BACKOFF_FACTOR ?? retry.backoff_factor
  return {
    timeoutMs:
      timeout === undefined
        ? defaultSendPolicy.timeoutMs
        : Math.round(number(timeout, 'the transport timeout (seconds)', 0.001, 600) * 1000),
    attempts:
      total === undefined ? defaultSendPolicy.attempts : number(total, 'the transport retry total', 0, 20, true) + 1,
    backoffMs:
      backoff === undefined
        ? defaultSendPolicy.backoffMs
        : Math.round(number(backoff, 'the transport retry backoff_factor (seconds)', 0, 60) * 1000),
  }
}

function retryOf(retry: unknown, source: string): {total?: unknown; backoff_factor?: unknown} {
  if (retry === undefined || retry === null) return {}
  if (typeof retry !== 'object')
    throw usageError(`${source}: the http transport's retry must be a mapping ({total, backoff_factor}).`)
  return retry
}

function parseRetryJson(text: string): {total?: unknown; backoff_factor?: unknown} {
  try {
    return retryOf(JSON.parse(text), 'OPENLINEAGE__TRANSPORT__RETRY')
  } catch (error) {
    if (error instanceof SyntaxError)
      throw usageError('OPENLINEAGE__TRANSPORT__RETRY is not JSON ({"total": 3, "backoff_factor": 0.3}).')
    throw error
  }
}

function number(value: unknown, what: string, min: number, max: number, integer = false): number {
  const n =
    typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN
  if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n)))
    throw usageError(
      `OpenLineage: ${what} must be ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(value)}.`,
    )
  return n
}

function endpointUrl(transport: HttpTransport, source: string): string {
  let url: URL
  try {
    url = new URL(
      transport.endpoint.replace(/^\//, ''),
      transport.url.endsWith('/') ? transport.url : `${transport.url}/`,
    )
  } catch {
    throw usageError(`${source}: ${JSON.stringify(transport.url)} is not a URL (expected http://host:port).`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw usageError(`${source}: ${JSON.stringify(transport.url)} must be http:// or https://.`)
  return url.toString()
}

/** `[openlineage] disabled_for_operators`, `selective_enable` and `emission_policy`, read as the provider reads them. */
function lineageFilters(env: NodeJS.ProcessEnv): {filters: LineageFilters; warnings: string[]} {
  const operators = openlineageOption('disabled_for_operators', env)?.value ?? ''
  const selective = openlineageOption('selective_enable', env)
  const policy = parseEmissionPolicy(openlineageOption('emission_policy', env))
  const filters: LineageFilters = {
    emissionPolicy: policy.rules,
    disabledOperators: operators
      .split(';')
      .map((name) => name.trim())
      .filter((name) => name !== ''),
    // Empty is the provider's fallback (false); anything else is read as Airflow's getboolean reads it.
    selectiveEnable:
      selective !== undefined && selective.value.trim() !== ''
        ? airflowConfig(() => parseBoolean(selective.value, `[openlineage] selective_enable (${selective.source})`))
        : false,
  }
  return {filters, warnings: policy.warnings}
}

/** What the operator is told before the batch: lineage configured in a way airlock does not send, or rules the provider ignores. */
export function lineageWarnings(settings: LineageSettings | undefined): string[] {
  if (!settings) return []
  if (settings.enabled) return settings.warnings
  return settings.warning ? [settings.warning] : []
}
