import type {Interfaces} from '@oclif/core'
import {HelpFormatter} from '@oclif/core/help'
import {describe, expect, it} from 'vitest'

import {wrapPlainText} from '../../src/cli/wrapPlainText.js'

/** oclif's own wrap (wrap-ansi, hard) at `columns`: what wrapPlainText must reproduce. */
function oclifWrap(text: string, columns: number): string {
  return new HelpFormatter({} as Interfaces.Config, {maxWidth: columns}).wrap(text, 0)
}

/** A small seeded generator (mulberry32), so a failure names a case that reproduces. */
function random(seed: number): () => number {
  let state = seed
  return () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Words of 0 to 30 characters (some longer than a row) between runs of 1-3 spaces, a few line breaks, spaces at the ends. */
function paragraph(next: () => number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789-_.,:;()"/[]|=+'
  const pick = (n: number) => Math.floor(next() * n)
  let text = ' '.repeat(pick(3))
  for (let words = pick(40); words > 0; words--) {
    const long = next() < 0.1
    text += Array.from({length: long ? pick(30) : pick(10)}, () => alphabet[pick(alphabet.length)]).join('')
    text += next() < 0.05 ? '\n' : ' '.repeat(1 + pick(next() < 0.8 ? 1 : 3))
  }
  return text
}

describe('wrapPlainText', () => {
  it('wraps as wrap-ansi does, on 3000 generated paragraphs at widths 1 to 40', () => {
    const next = random(20261203)
    for (let n = 0; n < 3000; n++) {
      const text = paragraph(next)
      const columns = 1 + Math.floor(next() * 40)
      expect(wrapPlainText(text, columns), `case ${n}: ${JSON.stringify(text)} at ${columns}`).toBe(
        oclifWrap(text, columns),
      )
    }
  })

  it('wraps as wrap-ansi does at the edges: empty lines, words exactly a row long, a word that fills the rest of a row', () => {
    const cases: Array<[string, number]> = [
      ['', 10],
      ['   ', 10],
      ['\n\n', 10],
      ['abcde', 5],
      ['abcdef', 5],
      ['ab abcdefghij', 5],
      ['abc abcdefgh', 5],
      ['a  b   c', 3],
      ['abcdefghijklmno', 1],
      [' lead and trail ', 8],
    ]
    for (const [text, columns] of cases)
      expect(wrapPlainText(text, columns), JSON.stringify(text)).toBe(oclifWrap(text, columns))
  })

  it('leaves what is not plain ASCII to wrap-ansi: escape codes, wider characters, tabs, no room', () => {
    expect(wrapPlainText('\u001b[1mUSAGE\u001b[22m', 80)).toBeUndefined()
    expect(wrapPlainText('one line per item ({"type":"item",…})', 80)).toBeUndefined()
    expect(wrapPlainText('a\tb', 80)).toBeUndefined()
    expect(wrapPlainText('a b', 0)).toBeUndefined()
  })
})
