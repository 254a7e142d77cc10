import {assetKey} from '../store/types.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import {checkedLines, checkReadable} from '../selection/ndjsonInput.js'
import {parseEventLine, type ParsedEventLine} from './parseEventLine.js'
import type {EventNames, EventSpec} from './reemitEvent.js'
import type {EventStore} from '../store/families/events.js'

/** What an event source yields: an event to emit, or a line/id that cannot be (reported, then skipped). */
export type EventWork =
  | {kind: 'emit'; cursor: string; spec: EventSpec}
  | {
      kind: 'unresolved'
      cursor: string
      label: string
      names: EventNames
      outcome: 'not_found' | 'unknown_asset'
      message: string
    }

const chunkSize = 500

/** --event-id: the stored events, in id order, from after the checkpoint's cursor. */
export async function* eventsById(
  airflow: Pick<AirflowDatabase<EventStore>, 'db' | 'store'>,
  ids: readonly number[],
  after: number | null,
): AsyncGenerator<EventWork> {
  const sorted = [...new Set(ids)].sort((a, b) => a - b).filter((id) => after === null || id > after)
  for (let start = 0; start < sorted.length; start += chunkSize) {
    const chunk = sorted.slice(start, start + chunkSize)
    const found = new Map(
      (await airflow.store.readEventsById(airflow.db.executor, chunk)).map((event) => [event.id, event]),
    )
    for (const id of chunk) {
      const event = found.get(id)
      if (!event) {
        yield {
          kind: 'unresolved',
          cursor: String(id),
          label: `event ${id}`,
          names: {eventId: id, asset: null, source: null},
          outcome: 'not_found',
          message: `asset_event ${id} does not exist`,
        }
        continue
      }

      yield {
        kind: 'emit',
        cursor: String(id),
        spec: {
          ...event,
          label: `event ${id}`,
          originalEventId: id,
          originalTimestamp: event.timestamp,
          skipIfSince: null,
        },
      }
    }
  }
}

/** Checks every line of an export file before anything is written; returns the number of lines. */
export async function validateEventFile(path: string): Promise<number> {
  await checkReadable(path, '--from-file')
  let count = 0
  for await (const {text, line} of checkedLines(path, '--from-file')) {
    parseEventLine(text, line, path)
    count++
  }

  return count
}

/** --from-file: lines matched to assets by name AND uri, aliases by name, in file order. */
export async function* eventsFromFile(
  airflow: Pick<AirflowDatabase<EventStore>, 'db' | 'store'>,
  path: string,
  options: {skipExisting: boolean; afterLine: number | null},
): AsyncGenerator<EventWork> {
  let chunk: Array<{line: number; parsed: ParsedEventLine}> = []
  const flush = async function* (): AsyncGenerator<EventWork> {
    const {assetIds, aliasIds} = await airflow.store.resolveAssetsAndAliases(
      airflow.db.executor,
      chunk.map((c) => c.parsed.asset),
      [...new Set(chunk.flatMap((c) => c.parsed.aliases))],
    )
    for (const {line, parsed} of chunk) {
      const assetId = assetIds.get(assetKey(parsed.asset))
      const label = `${path} line ${line}`
      if (assetId === undefined) {
        yield {
          kind: 'unresolved',
          cursor: String(line),
          label,
          names: {eventId: null, asset: parsed.asset.name, source: parsed.source},
          outcome: 'unknown_asset',
          message: `no asset named ${parsed.asset.name} with uri ${parsed.asset.uri} in this database`,
        }
        continue
      }

      yield {
        kind: 'emit',
        cursor: String(line),
        spec: {
          label,
          assetId,
          assetName: parsed.asset.name,
          assetUri: parsed.asset.uri,
          extra: JSON.stringify(parsed.extra),
          source: parsed.source,
          partitionKey: parsed.partition_key,
          aliasIds: parsed.aliases.map((name) => aliasIds.get(name)).filter((id): id is number => id !== undefined),
          unknownAliases: parsed.aliases.filter((name) => !aliasIds.has(name)),
          originalEventId: null,
          originalTimestamp: parsed.timestamp,
          logicalDate: null,
          owners: null,
          skipIfSince: options.skipExisting ? parsed.timestamp : null,
        },
      }
    }

    chunk = []
  }

  for await (const {text, line} of checkedLines(path, '--from-file')) {
    if (options.afterLine !== null && line <= options.afterLine) continue
    chunk.push({line, parsed: parseEventLine(text, line, path)})
    if (chunk.length >= chunkSize) yield* flush()
  }

  if (chunk.length > 0) yield* flush()
}
