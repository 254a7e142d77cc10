import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {AirlockError} from '../../src/errors.js'

import {parseEventLine} from '../../src/replay/parseEventLine.js'
import {openInputFile, parseInputLine} from '../../src/selection/inputFile.js'
import {checkedLines} from '../../src/selection/ndjsonInput.js'
import {usageMessage} from '../support/usage.js'

const fails = (text: string) => usageMessage(() => parseInputLine(text, 7, 'tis.ndjson'))

describe('NDJSON input lines', () => {
  it('accepts an id or a key (map_index defaults to -1) with outlet_events', () => {
    expect(parseInputLine('{"ti_id":"0193E3B2-5F7E-7C1A-9A59-3F1D2E4C5B6A"}', 1, 'f')).toEqual({
      ref: {tiId: '0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a'},
      outletEvents: [],
    })
    expect(
      parseInputLine(
        '{"dag_id":"d","run_id":"r","task_id":"t","outlet_events":[{"asset":"a","extra":{"n":1}},{"asset":"s3://x","alias":"al"}]}',
        1,
        'f',
      ),
    ).toEqual({
      ref: {key: {dagId: 'd', runId: 'r', taskId: 't', mapIndex: -1}},
      outletEvents: [
        {asset: 'a', extra: {n: 1}},
        {asset: 's3://x', alias: 'al'},
      ],
    })
  })

  it('partition keys per event: one, or a list for fan-out (a key given twice is one event); the asset extra of an alias emission', () => {
    const line =
      '{"ti_id":"0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a","outlet_events":[{"asset":"a","partition_key":"us"},' +
      '{"asset":"b","partition_keys":["eu","us","eu"]},{"asset":"c","partition_key":null},' +
      '{"asset":{"name":"n","uri":"u","extra":{"owner":"x"}},"alias":"al"}]}'
    expect(parseInputLine(line, 1, 'f').outletEvents).toEqual([
      {asset: 'a', partitionKeys: ['us']},
      {asset: 'b', partitionKeys: ['eu', 'us']},
      {asset: 'c'},
      {asset: {name: 'n', uri: 'u', extra: {owner: 'x'}}, alias: 'al'},
    ])
  })

  it.each([
    ['{oops', 'not valid JSON'],
    ['[1]', 'JSON object'],
    ['{"ti_id": 5}', 'UUID'],
    ['{"dag_id": "d", "run_id": "r"}', 'task_id'],
    ['{"dag_id": "d", "run_id": "r", "task_id": "t", "map_index": -2}', 'map_index'],
    ['{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "outlet_events": {}}', 'outlet_events must be an array'],
    ['{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "outlet_events": [{"extra": {}}]}', 'outlet_events[0].asset'],
    [
      '{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "outlet_events": [{"asset": "a", "extra": [1]}]}',
      'outlet_events[0].extra',
    ],
    ['{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "dag_id": "other"}', 'not both'],
    ['{"dag_id": "d", "run_id": "r", "task_id": "t", "mapindex": 3}', 'unknown key "mapindex"'],
    ['{"dag_id": "a\\u0000b", "run_id": "r", "task_id": "t"}', 'NUL character'],
    [
      '{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "outlet_events": [{"asset": "a", "extras": {}}]}',
      'outlet_events[0]: unknown key "extras"',
    ],
    [
      '{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "outlet_events": [{"asset": "a", "partition_key": ""}]}',
      'non-empty string',
    ],
    [
      '{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "outlet_events": [{"asset": "a", "partition_keys": []}]}',
      'non-empty array',
    ],
    [
      '{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "outlet_events": [{"asset": "a", "partition_key": "x", "partition_keys": ["y"]}]}',
      'not both',
    ],
    [
      `{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "outlet_events": [{"asset": "a", "partition_key": "${'k'.repeat(251)}"}]}`,
      'at most 250',
    ],
    [
      '{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "outlet_events": [{"asset": {"name": "n", "uri": "u", "extra": {}}}]}',
      'give "alias" too',
    ],
  ])('rejects %s naming the file, the line and the problem', (text, problem) => {
    const message = fails(text)
    expect(message).toContain('tis.ndjson line 7')
    expect(message).toContain(problem)
  })
})

describe('export-events lines read back by replay-events', () => {
  it('a NUL character in any string is refused before the server sees it (it failed mid-run as exit 1)', () => {
    const line = '{"asset": {"name": "a\\u0000", "uri": "x"}, "extra": {}, "timestamp": "2026-01-01T00:00:00Z"}'
    expect(usageMessage(() => parseEventLine(line, 3, 'incident.ndjson'))).toContain(
      'incident.ndjson line 3 holds a NUL character',
    )
  })
})

describe('NDJSON input files', () => {
  let dir: string
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-input-'))
  })
  afterAll(async () => fs.rm(dir, {recursive: true, force: true}))

  const write = async (name: string, content: string | Buffer) => {
    const file = path.join(dir, name)
    await fs.writeFile(file, content)
    return file
  }
  const id = '0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a'
  const failsToOpen = async (file: string) => {
    try {
      await openInputFile(file)
    } catch (error) {
      expect(error).toBeInstanceOf(AirlockError)
      expect((error as AirlockError).exit).toBe(2)
      return (error as AirlockError).message
    }
    throw new Error('expected a usage error')
  }

  it('accepts a UTF-8 byte order mark', async () => {
    const file = await write('bom.ndjson', `\uFEFF{"ti_id": "${id}"}\n`)
    expect((await openInputFile(file)).count).toBe(1)
  })

  it('a directory, a missing file: says which (exit 2)', async () => {
    expect(await failsToOpen(dir)).toContain('is a directory')
    expect(await failsToOpen(path.join(dir, 'missing.ndjson'))).toContain('does not exist')
  })

  it("a read that fails part-way is the input's fault (exit 2), not a crash", async () => {
    // A directory opens but cannot be read: the failure comes from the stream, not from a check.
    let message = ''
    try {
      for await (const line of checkedLines(dir, '--from-file')) expect(line).toBeUndefined()
    } catch (error) {
      expect(error).toBeInstanceOf(AirlockError)
      expect((error as AirlockError).exit).toBe(2)
      message = (error as AirlockError).message
    }
    expect(message).toContain(`--from-file ${dir} is a directory`)
  })

  it('the same task instance twice is one item, and the repeat is reported once with both lines', async () => {
    const file = await write(
      'twice.ndjson',
      `{"ti_id": "${id}"}\n{"dag_id":"d","run_id":"r","task_id":"t"}\n{"ti_id": "${id.toUpperCase()}"}\n`,
    )
    const warnings: string[] = []
    const input = await openInputFile(file, (message) => warnings.push(message))
    expect(input.count).toBe(2)
    const items = []
    for await (const item of input.items()) items.push(item)
    expect(items).toHaveLength(2)
    expect(warnings).toEqual([`${file} line 3 names the same task instance as line 1: done once`])
  })

  it('a line over 1 MiB is refused with its number; binary garbage is never echoed', async () => {
    const long = await write('long.ndjson', `{"ti_id": "${id}"}\n{"dag_id": "${'x'.repeat(1024 * 1024)}"}\n`)
    expect(await failsToOpen(long)).toContain('line 2 is longer than 1 MiB')
    const garbage = Buffer.from([0x7b, 0x00, 0xff, 0xfe, 0x53, 0x45, 0x43, 0x52, 0x45, 0x54, 0x0a])
    const message = await failsToOpen(await write('garbage.ndjson', garbage))
    expect(message).toContain('line 1 is not valid JSON')
    expect(message).not.toContain('SECRET')
    expect(message.includes('\u0000') || message.includes('\uFFFD')).toBe(false)
  })
})
