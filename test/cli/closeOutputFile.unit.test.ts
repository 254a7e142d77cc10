import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {closeOutputFile, openOutputFile} from '../../src/cli/outputFile.js'
import {AirlockError} from '../../src/errors.js'

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'airlock-output-'))
afterAll(() => fs.rmSync(dir, {recursive: true, force: true}))

describe("a command's --output file", () => {
  it('written to its end: closes quietly', async () => {
    const file = await openOutputFile(path.join(dir, 'ok.ndjson'), () => undefined)
    file.write('{"type":"finding"}')
    await closeOutputFile(file)
    expect(fs.readFileSync(file.path, 'utf8')).toBe('{"type":"finding"}\n')
  })

  it('not written to its end (its descriptor lost, as a full disk loses the last writes): exit 5 naming it, not a bug', async () => {
    const file = await openOutputFile(path.join(dir, 'cut.ndjson'), () => undefined)
    fs.closeSync((file.stream as unknown as {fd: number}).fd)
    file.write('{"type":"finding"}')
    const error = await closeOutputFile(file).then(
      () => undefined,
      (failure: unknown) => failure,
    )
    expect(error).toBeInstanceOf(AirlockError)
    expect(error).toMatchObject({exit: 5, code: 'OUTPUT_FAILED'})
    expect((error as Error).message).toContain(`--output ${file.path}: writing failed`)
    expect((error as Error).message).toContain('the file is incomplete')
  })
})
