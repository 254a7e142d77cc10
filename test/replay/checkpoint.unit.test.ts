import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {AirlockError} from '../../src/errors.js'
import {Checkpoint, fingerprintOf} from '../../src/replay/checkpoint.js'

describe('Checkpoint', () => {
  it('advances over finished prefixes, never past a failed item, and refuses another selection', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-ckpt-'))
    const file = path.join(dir, 'c.json')
    const checkpoint = await Checkpoint.open(file, fingerprintOf({a: 1}))
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((cursor) => checkpoint.take(cursor))
    await checkpoint.finish(b!)
    await checkpoint.finish(a!)
    await checkpoint.finish(c!, false)
    await checkpoint.finish(d!)
    await checkpoint.save()
    expect(JSON.parse(await fs.readFile(file, 'utf8'))).toMatchObject({cursor: 'b', done: 2})
    const resumed = await Checkpoint.open(file, fingerprintOf({a: 1}))
    expect(resumed.resumeFrom).toBe('b')
    await expect(Checkpoint.open(file, fingerprintOf({a: 2}))).rejects.toBeInstanceOf(AirlockError)
    await expect(Checkpoint.open(path.join(dir, 'missing', 'x.json'), 'f')).rejects.toMatchObject({exit: 2})
    await fs.rm(dir, {recursive: true, force: true})
  })
})
