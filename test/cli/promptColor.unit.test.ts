import {PassThrough, Writable} from 'node:stream'

import {confirm} from '@inquirer/prompts'
import {afterEach, describe, expect, it, vi} from 'vitest'

import {promptTheme} from '../../src/cli/confirm.js'
import {hasColour} from '../support/ansi.js'

/** Asks the bulk-write question with the theme airlock would use, answers "y", returns what was drawn. */
async function promptOutput(): Promise<string> {
  const input = new PassThrough()
  let drawn = ''
  const output = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      drawn += chunk.toString()
      callback()
    },
  })
  const answer = confirm(
    {message: 'Mark success 3 task instances?', default: false, theme: promptTheme()},
    {input, output},
  )
  await vi.waitFor(() => expect(drawn).toContain('Mark success'))
  input.write('y\n')
  expect(await answer).toBe(true)
  return drawn
}

afterEach(() => {
  vi.unstubAllEnvs()
})

describe('colour in the confirmation prompt', () => {
  // Node's styleText, under inquirer, colours for FORCE_COLOR even off a terminal: only airlock's
  // theme can take the colour away.
  it('inquirer colours it when nothing says no (the control)', async () => {
    vi.stubEnv('FORCE_COLOR', '1')
    vi.stubEnv('NO_COLOR', '')
    expect(hasColour(await promptOutput())).toBe(true)
  })

  it('NO_COLOR wins over FORCE_COLOR: the question, the hint and the answer are drawn plain', async () => {
    vi.stubEnv('FORCE_COLOR', '1')
    vi.stubEnv('NO_COLOR', '1')
    const drawn = await promptOutput()
    expect(drawn).toContain('? Mark success 3 task instances? (y/N)')
    expect(hasColour(drawn)).toBe(false)
  })
})
