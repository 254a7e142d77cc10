import {readAirflowString} from '../airflow/config.js'
import {usageError} from '../errors.js'

/** Where COMPLETE events go, or why none are sent. */
export type LineageSettings =
  | {enabled: true; url: string; apiKey: string | undefined; namespace: string; source: string}
  | {enabled: false; reason: string}

/**
 * The OpenLineage client's own settings, as Airflow's provider and openlineage-python read them
 * (providers/openlineage conf.py `namespace`, `is_disabled`; the client's HTTP transport from
 * `OPENLINEAGE_URL`): `--no-lineage`, `OPENLINEAGE_DISABLED` or `[openlineage] disabled` turn it
 * off; `--openlineage-url` or `OPENLINEAGE_URL` (with `OPENLINEAGE_ENDPOINT`, default
 * `api/v1/lineage`, and `OPENLINEAGE_API_KEY` as a Bearer token) name the backend; the namespace
 * is `[openlineage] namespace`, else `OPENLINEAGE_NAMESPACE`, else `default`. A configuration file
 * (`OPENLINEAGE_CONFIG`, `openlineage.yml`) is not read: it is named in the reason instead, so
 * nobody believes lineage went out when it did not.
 */
export function lineageSettings(
  flags: {openlineageUrl?: string | undefined; lineage: boolean},
  env: NodeJS.ProcessEnv = process.env,
): LineageSettings {
  if (!flags.lineage) return {enabled: false, reason: '--no-lineage'}
  const truthy = (value: string | undefined) => ['true', '1', 't'].includes((value ?? '').trim().toLowerCase())
  if (truthy(env.OPENLINEAGE_DISABLED)) return {enabled: false, reason: 'OPENLINEAGE_DISABLED'}
  if (truthy(readAirflowString('openlineage', 'disabled', env)?.value))
    return {enabled: false, reason: '[openlineage] disabled'}
  const base = flags.openlineageUrl ?? env.OPENLINEAGE_URL
  if (!base) {
    const file = env.OPENLINEAGE_CONFIG
    return {
      enabled: false,
      reason: file
        ? `OPENLINEAGE_CONFIG (${file}) is not read by airlock; set OPENLINEAGE_URL`
        : 'no OPENLINEAGE_URL or --openlineage-url',
    }
  }
  let url: URL
  try {
    const endpoint = (env.OPENLINEAGE_ENDPOINT ?? 'api/v1/lineage').replace(/^\//, '')
    url = new URL(endpoint, base.endsWith('/') ? base : `${base}/`)
  } catch {
    throw usageError(`OpenLineage URL ${JSON.stringify(base)} is not a URL (expected http://host:port).`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw usageError(`OpenLineage URL ${JSON.stringify(base)} must be http:// or https://.`)
  const namespace = readAirflowString('openlineage', 'namespace', env)?.value || env.OPENLINEAGE_NAMESPACE || 'default'
  return {
    enabled: true,
    url: url.toString(),
    apiKey: env.OPENLINEAGE_API_KEY || undefined,
    namespace,
    source: flags.openlineageUrl ? '--openlineage-url' : 'OPENLINEAGE_URL',
  }
}
