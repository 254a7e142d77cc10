import {describe, expect, it} from 'vitest'

import {parseInputLine} from '../../src/selection/inputFile.js'
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

  it.each([
    ['{oops', 'not valid JSON'],
    ['[1]', 'JSON object'],
    ['{"ti_id": 5}', 'UUID'],
    ['{"dag_id": "d", "run_id": "r"}', 'task_id'],
    ['{"dag_id": "d", "run_id": "r", "task_id": "t", "map_index": -2}', 'map_index'],
    ['{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "outlet_events": {}}', 'outlet_events must be an array'],
    ['{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "outlet_events": [{"extra": {}}]}', 'outlet_events[0].asset'],
    ['{"ti_id": "0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a", "outlet_events": [{"asset": "a", "extra": [1]}]}', 'outlet_events[0].extra'],
  ])('rejects %s naming the file, the line and the problem', (text, problem) => {
    const message = fails(text)
    expect(message).toContain('tis.ndjson line 7')
    expect(message).toContain(problem)
  })
})
