import readline from 'node:readline'
import {Writable} from 'node:stream'

import {afterEach, beforeAll, describe, expect, it, vi} from 'vitest'

import {colorAllowed} from '../../src/output/color.js'
import {createProgress} from '../../src/output/progress.js'
import {hasColour} from '../support/ansi.js'

/** A stream that says it is a terminal 80 columns wide and keeps what was written to it. */
function fakeTerminal(): NodeJS.WriteStream & {written: () => string} {
  const chunks: string[] = []
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      chunks.push(chunk.toString())
      callback()
    },
  }) as unknown as NodeJS.WriteStream & {written: () => string}
  // What a tty.WriteStream adds, and ora calls to redraw its line.
  Object.assign(stream, {
    isTTY: true,
    columns: 80,
    cursorTo: (x: number) => readline.cursorTo(stream, x),
    moveCursor: (dx: number, dy: number) => readline.moveCursor(stream, dx, dy),
    clearLine: (dir: -1 | 0 | 1) => readline.clearLine(stream, dir),
    written: () => chunks.join(''),
  })
  return stream
}

/** Starts a spinner on a fake terminal, waits for its first frame, stops it: everything it wrote. */
async function spinnerOutput(): Promise<string> {
  const stream = fakeTerminal()
  const progress = createProgress({label: 'completing', total: 5, stream, enabled: true})
  await vi.waitFor(() => expect(stream.written()).toContain('completing'), {timeout: 5000})
  progress.stop()
  return stream.written()
}

beforeAll(() => {
  // chalk (under ora) decides at import whether colour is possible: FORCE_COLOR makes it so
  // without a real terminal, so only airlock's own decision can take the colour away. ora draws
  // only when it believes it is interactive: not under CI, not on a dumb terminal.
  vi.stubEnv('FORCE_COLOR', '1')
  vi.stubEnv('CI', undefined)
  vi.stubEnv('TERM', 'xterm-256color')
})

afterEach(() => {
  vi.unstubAllEnvs()
  vi.stubEnv('FORCE_COLOR', '1')
  vi.stubEnv('CI', undefined)
  vi.stubEnv('TERM', 'xterm-256color')
})

describe('colour in the progress spinner', () => {
  it('is drawn when nothing says no (the control: the fake terminal shows colour)', async () => {
    vi.stubEnv('NO_COLOR', '')
    expect(hasColour(await spinnerOutput())).toBe(true)
  })

  it('NO_COLOR wins over FORCE_COLOR', async () => {
    vi.stubEnv('NO_COLOR', '1')
    const output = await spinnerOutput()
    expect(output).toContain('completing')
    expect(hasColour(output)).toBe(false)
  })
})

describe('colorAllowed', () => {
  it('--no-color and a non-empty NO_COLOR turn colour off, whatever FORCE_COLOR says; an empty NO_COLOR does not', () => {
    expect(colorAllowed(['node', 'run.js', 'complete'], {})).toBe(true)
    expect(colorAllowed(['node', 'run.js', 'complete', '--no-color'], {FORCE_COLOR: '1'})).toBe(false)
    expect(colorAllowed(['node', 'run.js', 'complete'], {NO_COLOR: '1', FORCE_COLOR: '3'})).toBe(false)
    expect(colorAllowed(['node', 'run.js', 'complete'], {NO_COLOR: ''})).toBe(true)
    expect(colorAllowed(['node', 'run.js', 'complete'], {FORCE_COLOR: '0'})).toBe(false)
    // After `--` it is an operand, not the flag.
    expect(colorAllowed(['node', 'run.js', 'complete', '--', '--no-color'], {})).toBe(true)
  })
})
