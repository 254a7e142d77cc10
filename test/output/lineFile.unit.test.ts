import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {createLineFile} from '../../src/output/lineFile.js'

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'airlock-linefile-'))
afterAll(() => fs.rmSync(dir, {recursive: true, force: true}))

describe('a line file', () => {
  it('close waits for the lines to be on disk', async () => {
    const file = await createLineFile(path.join(dir, 'ok.ndjson'))
    file.write('{"a":1}')
    file.write('{"b":2}\n')
    await file.close()
    expect(fs.readFileSync(file.path, 'utf8')).toBe('{"a":1}\n{"b":2}\n')
  })

  it('a write that fails (here its descriptor closed under it, as a full disk fails it) makes close reject', async () => {
    const file = await createLineFile(path.join(dir, 'lost.ndjson'))
    fs.closeSync((file.stream as unknown as {fd: number}).fd)
    file.write('{"a":1}')
    await expect(file.close()).rejects.toMatchObject({code: 'EBADF'})
  })

  it('is never written over', async () => {
    await expect(createLineFile(path.join(dir, 'ok.ndjson'))).rejects.toMatchObject({code: 'EEXIST'})
  })
})
