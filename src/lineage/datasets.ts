/**
 * An asset as the OpenLineage dataset Airflow's provider makes of it, or none.
 *
 * The provider (apache-airflow-providers-openlineage utils/utils.py `translate_airflow_asset`,
 * called for a task's outlets by extractors/manager.py `ExtractorManager.convert_to_ol_dataset`
 * from 2.16.0; read in the 2.16.0 and 2.20.3 wheels) takes the asset's `normalized_uri` (task SDK
 * definitions/asset/__init__.py `Asset.normalized_uri`: the URI's lower-cased scheme must have a
 * normalizer, core's `normalize_noop` for `file` or a provider's `sanitize_uri`; a normalizer that
 * raises gives None), then hands the converter registered for the normalized scheme
 * (`to_openlineage_converter` in a provider's `asset-uris`) `Asset(uri=normalized_uri)`, which
 * sanitizes the URI once more (`_sanitize_uri`: userinfo with a password dropped, trailing slashes
 * stripped with an empty path made "/", then the normalizer again). No scheme, no normalizer or
 * no converter: no dataset at all; a converter or sanitizer that raises: none either (the
 * function catches it from 2.16.0). A plain `Asset("x")` (URI `x`, no scheme) produces no dataset.
 *
 * The URI read from the `asset` table was already sanitized when the DAG was parsed; the provider
 * runs the normalizer again, so it is run here again too.
 */

/** Python's `urllib.parse.urlsplit`, for the URIs the converters read. */
export interface SplitUri {
  scheme: string
  netloc: string
  path: string
  query: string
}

export function urlsplit(uri: string): SplitUri {
  let rest = uri
  let scheme = ''
  const schemeMatch = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(rest)
  if (schemeMatch) {
    scheme = schemeMatch[1]!.toLowerCase()
    rest = rest.slice(schemeMatch[0].length)
  }
  let netloc = ''
  if (rest.startsWith('//')) {
    const end = rest.slice(2).search(/[/?#]/)
    netloc = end === -1 ? rest.slice(2) : rest.slice(2, 2 + end)
    rest = end === -1 ? '' : rest.slice(2 + end)
  }
  const hash = rest.indexOf('#')
  if (hash !== -1) rest = rest.slice(0, hash)
  const question = rest.indexOf('?')
  const query = question === -1 ? '' : rest.slice(question + 1)
  const path = question === -1 ? rest : rest.slice(0, question)
  return {scheme, netloc, path, query}
}

/** A normalizer or converter refusing the URI (Python's ValueError): the provider makes no dataset. */
class Refused extends Error {}

/** `SplitResult.port`: null when absent, Refused when not a port number (Python raises ValueError). */
function port(uri: SplitUri): number | null {
  const host = uri.netloc.slice(uri.netloc.lastIndexOf('@') + 1)
  const bracket = host.lastIndexOf(']')
  const colon = host.lastIndexOf(':')
  if (colon === -1 || colon < bracket) return null
  const text = host.slice(colon + 1)
  if (text === '') return null
  if (!/^\d+$/.test(text) || Number(text) > 65535) throw new Refused(`port ${text}`)
  return Number(text)
}

/** The sanitizers' `uri._replace(netloc=f"{host}:{default}")` when the URI names no port. */
function withDefaultPort(uri: SplitUri, defaultPort: number): SplitUri {
  return port(uri) === null ? {...uri, netloc: `${uri.netloc.replace(/:+$/, '')}:${defaultPort}`} : uri
}

function requireHost(uri: SplitUri): void {
  if (!uri.netloc) throw new Refused('no host')
}

function requireParts(uri: SplitUri, count: number): string[] {
  const parts = uri.path.split('/')
  if (parts.length !== count) throw new Refused(`path has ${parts.length - 1} parts`)
  return parts
}

export interface Dataset {
  namespace: string
  name: string
}

interface Converter {
  /** The scheme's `sanitize_uri` (the normalizer `normalized_uri` runs). */
  normalize: (uri: SplitUri) => SplitUri
  /** The scheme's `convert_asset_to_openlineage`. */
  convert: (uri: SplitUri) => Dataset
}

/** `namespace://netloc` and the path's parts joined by dots: the database converters' shape. */
const dotted = (scheme: string, uri: SplitUri): Dataset => ({
  namespace: `${scheme}://${uri.netloc}`,
  name: uri.path.split('/').slice(1).join('.'),
})

/**
 * Every scheme with both a normalizer and a converter, by provider. Where a provider file is
 * named, the normalizer and converter transcribed are its `sanitize_uri` and
 * `convert_asset_to_openlineage`, as the release named first registers them under `asset-uris`
 * (what Airflow 3 reads) and unchanged through the newest release read (docs/lineage.md).
 */
const converters: Record<string, Converter> = {
  // Core (task-sdk definitions/asset/__init__.py `_get_uri_normalizer`: `normalize_noop` for
  // file) and common-io assets/file.py `convert_asset_to_openlineage` (1.5.2+): a path of "/" is
  // a local name in the netloc; else namespace file://{netloc} (or "file" without one), name the
  // path. (1.4.2 to 1.5.1 always made the namespace file://{netloc}.)
  file: {
    normalize: (uri) => uri,
    convert: (uri) => {
      if (uri.path === '/') return {namespace: 'file', name: uri.netloc.startsWith('/') ? uri.netloc : `/${uri.netloc}`}
      return {namespace: uri.netloc ? `file://${uri.netloc}` : 'file', name: uri.path}
    },
  },
  // amazon aws/assets/s3.py (9.0.0+): `sanitize_uri` needs a bucket; `convert_asset_to_openlineage` uses
  // hooks/s3.py `S3Hook.parse_s3_url` (bucket = netloc, key = path without its leading slashes).
  s3: {
    normalize: (uri) => (requireHost(uri), uri),
    convert: (uri) => ({namespace: `s3://${uri.netloc}`, name: uri.path.replace(/^\/+/, '') || '/'}),
  },
  // amazon aws/assets/redshift.py (9.29.0+): default port 5439, database/schema/table.
  redshift: {
    normalize: (uri) => {
      requireHost(uri)
      const sane = withDefaultPort(uri, 5439)
      requireParts(sane, 4)
      return sane
    },
    convert: (uri) => dotted('redshift', uri),
  },
  // google assets/gcs.py (10.25.0+): `sanitize_uri` needs a bucket; `convert_asset_to_openlineage` uses
  // cloud/hooks/gcs.py `_parse_gcs_url` (bucket = netloc, blob = path without its leading slash).
  gs: {
    normalize: (uri) => (requireHost(uri), uri),
    convert: (uri) => ({namespace: `gs://${uri.netloc}`, name: uri.path.replace(/^\/+/, '') || '/'}),
  },
  // google assets/bigquery.py (14.0.0+): project/dataset/table; namespace "bigquery", name dotted.
  bigquery: {
    normalize: (uri) => (requireHost(uri), requireParts(uri, 3), uri),
    convert: (uri) => {
      const [project, dataset, table] = `${uri.scheme}://${uri.netloc}${uri.path}`.split('/').slice(-3)
      return {namespace: 'bigquery', name: `${project}.${dataset}.${table}`}
    },
  },
  // mysql assets/mysql.py (6.6.0+, for mysql and mariadb): default port 3306, database/table;
  // scheme becomes mysql.
  mysql: {
    normalize: (uri) => {
      requireHost(uri)
      const sane = withDefaultPort(uri, 3306)
      requireParts(sane, 3)
      return {...sane, scheme: 'mysql'}
    },
    convert: (uri) => dotted('mysql', uri),
  },
  // sftp assets/sftp.py (5.8.0+): default port 22; the dataset is a file on that host.
  sftp: {
    normalize: (uri) => {
      requireHost(uri)
      const sane = withDefaultPort(uri, 22)
      if (!sane.path) throw new Refused('no path')
      return sane
    },
    convert: (uri) => ({namespace: `file://${uri.netloc}`, name: uri.path.replace(/^\//, '') || '/'}),
  },
  // snowflake assets/snowflake.py (6.13.0+): account/database/schema/table.
  snowflake: {
    normalize: (uri) => (requireHost(uri), requireParts(uri, 4), uri),
    convert: (uri) => dotted('snowflake', uri),
  },
  // databricks assets/databricks.py (7.15.0+): host/catalog/schema/table.
  databricks: {
    normalize: (uri) => (requireHost(uri), requireParts(uri, 4), uri),
    convert: (uri) => dotted('databricks', uri),
  },
  // teradata assets/teradata.py (3.6.0+): default port 1025, database/table.
  teradata: {
    normalize: (uri) => {
      requireHost(uri)
      const sane = withDefaultPort(uri, 1025)
      requireParts(sane, 3)
      return sane
    },
    convert: (uri) => dotted('teradata', uri),
  },
  // postgres assets/postgres.py (6.7.0+; 6.6.3 and earlier register only sanitize_uri, so no
  // dataset): default port 5432, database/schema/table with an empty schema named "default",
  // scheme postgres (for postgresql too).
  postgres: {
    normalize: (uri) => {
      requireHost(uri)
      const sane = withDefaultPort(uri, 5432)
      const parts = requireParts(sane, 4)
      if (!parts[2]) parts[2] = 'default'
      return {...sane, scheme: 'postgres', path: parts.join('/')}
    },
    convert: (uri) => dotted('postgres', uri),
  },
  // trino assets/trino.py (6.6.0+; 6.5.2 and earlier register only sanitize_uri): default port
  // 8080, catalog/schema/table.
  trino: {
    normalize: (uri) => {
      requireHost(uri)
      const sane = withDefaultPort(uri, 8080)
      requireParts(sane, 4)
      return sane
    },
    convert: (uri) => dotted('trino', uri),
  },
  // sqlite registers no asset URI at all (no normalizer): no dataset.
}
// The schemes each provider registers several of (provider.yaml `asset-uris` `schemes`): mysql
// also `mariadb`, postgres also `postgresql`. google registers `gs` only, never `gcs`.
converters.mariadb = converters.mysql!
converters.postgresql = converters.postgres!

/** The schemes airlock converts, for the documentation test. */
export const convertedSchemes = Object.keys(converters).sort()

/**
 * Core's `_sanitize_uri` as `Asset(uri=…)` runs it on the normalized URI, for the parts the
 * converters read: userinfo dropped when it carries a password (`parsed.password` truthy),
 * trailing slashes stripped (`path.rstrip("/") or "/"`). The query and fragment no converter
 * reads.
 */
function assetSanitize(uri: SplitUri): SplitUri {
  const at = uri.netloc.lastIndexOf('@')
  const userinfo = at === -1 ? '' : uri.netloc.slice(0, at)
  const colon = userinfo.indexOf(':')
  const hasPassword = colon !== -1 && userinfo.slice(colon + 1) !== ''
  return {
    ...uri,
    netloc: hasPassword ? uri.netloc.slice(at + 1) : uri.netloc,
    path: uri.path.replace(/\/+$/, '') || '/',
  }
}

/** The dataset the provider makes of an asset's URI, or undefined when it makes none. */
export function datasetOf(uri: string): Dataset | undefined {
  const split = urlsplit(uri)
  if (!split.scheme) return undefined
  const converter = converters[split.scheme]
  if (!converter) return undefined
  try {
    const normalized = converter.normalize(split)
    // `translate_airflow_asset` looks the converter up by the normalized URI's scheme, and hands
    // it `Asset(uri=normalized_uri)`: sanitized again, that scheme's normalizer run again.
    const target = converters[normalized.scheme]
    return target ? target.convert(target.normalize(assetSanitize(normalized))) : undefined
  } catch (error) {
    if (error instanceof Refused) return undefined
    throw error
  }
}
