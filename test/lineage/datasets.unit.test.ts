import {describe, expect, it} from 'vitest'

import {datasetOf, urlsplit} from '../../src/lineage/datasets.js'

/**
 * The dataset Airflow's OpenLineage provider makes of each asset URI (the URI as the `asset`
 * table stores it, sanitized), per scheme. Expectations are the providers' own: where a provider
 * tests its converter, its test's values (named in the row), else read off its
 * `convert_asset_to_openlineage`. `undefined`: the provider makes no dataset.
 */
const table: Array<[scheme: string, uri: string, expected: {namespace: string; name: string} | undefined]> = [
  // common-io assets/file.py
  ['file', 'file:///data/out/report.csv', {namespace: 'file', name: '/data/out/report.csv'}],
  ['file', 'file://host/data/out.csv', {namespace: 'file://host', name: '/data/out.csv'}],
  ['file', 'file://relative/', {namespace: 'file', name: '/relative'}],
  // Not a stored form (the sanitizer makes an empty path "/"), but what the converter makes of it.
  ['file', 'file://relative', {namespace: 'file://relative', name: ''}],
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
  ['gcs', 'gcs://bucket/dir/file.parquet', {namespace: 'gs://bucket', name: 'dir/file.parquet'}],
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
  // postgres, trino, sqlite: apache/airflow's providers register no converter (postgres's
  // assets/postgres.py holds only sanitize_uri), so no dataset.
  ['postgres', 'postgres://example.com:5432/mydb/public/users', undefined],
  ['postgresql', 'postgresql://example.com/mydb/public/users', undefined],
  ['trino', 'trino://trino.example.com:8080/hive/sales/orders', undefined],
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
