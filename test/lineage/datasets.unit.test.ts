import {describe, expect, it} from 'vitest'

import {datasetOf, urlsplit} from '../../src/lineage/datasets.js'

/**
 * The dataset Airflow's OpenLineage provider makes of each asset URI (the URI as the `asset`
 * table stores it, sanitized), per scheme. `undefined`: the provider makes no dataset. Every
 * expected value below is what the released providers' own code returns for that URI: the rows
 * were run through apache-airflow-providers-openlineage 2.20.3's `translate_airflow_asset`
 * (utils/utils.py) in a Python environment with Airflow 3.2.2 and these released wheels installed
 * as the provider manager registers them: amazon 9.39.0, google 22.8.0, mysql 6.7.1, sftp 7.0.0,
 * snowflake 6.20.0, databricks 7.23.0, teradata 3.7.1, common-io 1.11.0, postgres 7.1.1 and
 * trino 6.7.1 (docs/lineage.md names the first release of each converter).
 */
const table: Array<[scheme: string, uri: string, expected: {namespace: string; name: string} | undefined]> = [
  // common-io assets/file.py
  ['file', 'file:///data/out/report.csv', {namespace: 'file', name: '/data/out/report.csv'}],
  ['file', 'file://host/data/out.csv', {namespace: 'file://host', name: '/data/out.csv'}],
  ['file', 'file://relative/', {namespace: 'file', name: '/relative'}],
  // Not a stored form; `translate_airflow_asset` hands the converter `Asset(uri=normalized_uri)`,
  // whose own sanitizing makes the empty path "/".
  ['file', 'file://relative', {namespace: 'file', name: '/relative'}],
  // amazon aws/assets/s3.py
  ['s3', 's3://lake/etl/produce/out_1', {namespace: 's3://lake', name: 'etl/produce/out_1'}],
  ['s3', 's3://bucket', {namespace: 's3://bucket', name: '/'}],
  ['s3', 's3:///no-bucket', undefined],
  // amazon aws/assets/redshift.py
  [
    'redshift',
    'redshift://cluster.aws:5439/dev/public/sales',
    {namespace: 'redshift://cluster.aws:5439', name: 'dev.public.sales'},
  ],
  [
    'redshift',
    'redshift://cluster.aws/dev/public/sales',
    {namespace: 'redshift://cluster.aws:5439', name: 'dev.public.sales'},
  ],
  // google assets/gcs.py
  ['gs', 'gs://bucket/dir/file.parquet', {namespace: 'gs://bucket', name: 'dir/file.parquet'}],
  // No google release registers `gcs` (provider.yaml `asset-uris`: `gs` only): no normalizer.
  ['gcs', 'gcs://bucket/dir/file.parquet', undefined],
  ['gs', 'gs://bucket', {namespace: 'gs://bucket', name: '/'}],
  // google assets/bigquery.py
  [
    'bigquery',
    'bigquery://my-project/my_dataset/my_table',
    {namespace: 'bigquery', name: 'my-project.my_dataset.my_table'},
  ],
  ['bigquery', 'bigquery://my-project/my_dataset', undefined],
  // mysql assets/mysql.py
  ['mysql', 'mysql://db.example.com:3306/shop/orders', {namespace: 'mysql://db.example.com:3306', name: 'shop.orders'}],
  ['mysql', 'mysql://db.example.com/shop/orders', {namespace: 'mysql://db.example.com:3306', name: 'shop.orders'}],
  ['mysql', 'mysql://db.example.com:3306/shop/public/orders', undefined],
  // mysql registers `mariadb` too; its sanitize_uri makes the scheme mysql.
  ['mariadb', 'mariadb://db.example.com/shop/orders', {namespace: 'mysql://db.example.com:3306', name: 'shop.orders'}],
  // sftp assets/sftp.py
  [
    'sftp',
    'sftp://files.example.com:22/incoming/data.csv',
    {namespace: 'file://files.example.com:22', name: 'incoming/data.csv'},
  ],
  [
    'sftp',
    'sftp://files.example.com/incoming/data.csv',
    {namespace: 'file://files.example.com:22', name: 'incoming/data.csv'},
  ],
  // snowflake assets/snowflake.py
  [
    'snowflake',
    'snowflake://xy12345/ANALYTICS/PUBLIC/ORDERS',
    {namespace: 'snowflake://xy12345', name: 'ANALYTICS.PUBLIC.ORDERS'},
  ],
  // databricks assets/databricks.py
  [
    'databricks',
    'databricks://adb-1.azuredatabricks.net/main/sales/orders',
    {namespace: 'databricks://adb-1.azuredatabricks.net', name: 'main.sales.orders'},
  ],
  // teradata assets/teradata.py
  [
    'teradata',
    'teradata://td.example.com:1025/sales/orders',
    {namespace: 'teradata://td.example.com:1025', name: 'sales.orders'},
  ],
  [
    'teradata',
    'teradata://td.example.com/sales/orders',
    {namespace: 'teradata://td.example.com:1025', name: 'sales.orders'},
  ],
  // postgres assets/postgres.py (6.7.0+): default port 5432, database/schema/table, an empty
  // schema named "default", scheme postgres for postgresql too.
  [
    'postgres',
    'postgres://example.com:5432/mydb/public/users',
    {namespace: 'postgres://example.com:5432', name: 'mydb.public.users'},
  ],
  [
    'postgresql',
    'postgresql://example.com/mydb/public/users',
    {namespace: 'postgres://example.com:5432', name: 'mydb.public.users'},
  ],
  [
    'postgres',
    'postgres://example.com:5432/mydb//users',
    {namespace: 'postgres://example.com:5432', name: 'mydb.default.users'},
  ],
  [
    'postgres',
    'postgres://example.com:/mydb/public/users',
    {namespace: 'postgres://example.com:5432', name: 'mydb.public.users'},
  ],
  ['postgres', 'postgres://example.com:5432/mydb/users', undefined],
  ['postgres', 'postgres:///mydb/public/users', undefined],
  // trino assets/trino.py (6.6.0+): default port 8080, catalog/schema/table.
  [
    'trino',
    'trino://trino.example.com:8080/hive/sales/orders',
    {namespace: 'trino://trino.example.com:8080', name: 'hive.sales.orders'},
  ],
  [
    'trino',
    'trino://trino.example.com/hive/sales/orders',
    {namespace: 'trino://trino.example.com:8080', name: 'hive.sales.orders'},
  ],
  [
    'trino',
    'trino://alice@trino.example.com/hive/sales/orders',
    {namespace: 'trino://alice@trino.example.com:8080', name: 'hive.sales.orders'},
  ],
  ['trino', 'trino://trino.example.com:8080/hive/orders', undefined],
  // sqlite registers no asset URI at all.
  ['sqlite', 'sqlite:///path/to/my.db/mytable', undefined],
  // No converter: a name-only asset, an unknown scheme, a scheme only core reserves.
  ['(none)', 'x', undefined],
  ['(none)', 'daily_orders', undefined],
  ['(unknown)', 'kafka-like://broker/topic', undefined],
  ['(unknown)', 'x-custom://anything/here', undefined],
  ['(unknown)', 'http://example.com/data.csv', undefined],
]

describe('datasetOf: the provider converters, scheme by scheme', () => {
  it.each(table)('%s %s', (_scheme, uri, expected) => {
    expect(datasetOf(uri)).toEqual(expected)
  })
})

describe('urlsplit mirrors Python urllib.parse.urlsplit', () => {
  it('splits scheme (lower-cased), netloc, path and query; drops the fragment', () => {
    expect(urlsplit('S3://Bucket/a/b?x=1#frag')).toEqual({scheme: 's3', netloc: 'Bucket', path: '/a/b', query: 'x=1'})
    expect(urlsplit('x')).toEqual({scheme: '', netloc: '', path: 'x', query: ''})
    expect(urlsplit('file:///tmp/a')).toEqual({scheme: 'file', netloc: '', path: '/tmp/a', query: ''})
  })
})
