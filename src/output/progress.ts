import type {Ora} from 'ora'

import {colorAllowed} from './color.js'

/**
 * Progress on stderr: a spinner line on a terminal, a plain line every `intervalMs` otherwise
 * (cron logs, CI), never on stdout. Silent for a single item.
 */
export interface Progress {
  update(done: number, detail: string): void
  /**
   * A line about the whole run (an item waiting on a lock): kept under the spinner, or printed
   * once per `key` (the text changes every second, the news only when the key does).
   */
  status(text: string | undefined, key?: string): void
  stop(): void
}

export function createProgress(options: {
  label: string
  total: number | null
  stream?: NodeJS.WriteStream
  intervalMs?: number
  enabled: boolean
}): Progress {
  const stream = options.stream ?? process.stderr
  // A status is news even for one item (the common "why is it hanging?" case): a plain line.
  let lastKey: string | undefined
  const printStatus = (text: string | undefined, key = text) => {
    if (text !== undefined && key !== lastKey) stream.write(`${text}\n`)
    lastKey = text === undefined ? undefined : key
  }
  if (!options.enabled) return {update() {}, status() {}, stop() {}}
  if (options.total === 1) return {update() {}, status: printStatus, stop() {}}
  const started = Date.now()
  // The rate and ETA count from the first item done, not from the start: a pass whose first
  // batch waits for a server-side sort would otherwise show a rate that only ever climbs.
  let firstDone: {at: number; done: number} | undefined
  const line = (done: number, detail: string) => {
    if (done > 0 && !firstDone) firstDone = {at: Date.now(), done}
    const since = firstDone ?? {at: started, done: 0}
    const seconds = (Date.now() - since.at) / 1000
    const perSecond = seconds > 0 ? (done - since.done) / seconds : 0
    const rate =
      seconds > 0 && done > since.done
        ? ` · ${perSecond >= 100 ? Math.round(perSecond).toLocaleString('en-US') : perSecond.toFixed(1)}/s`
        : ''
    const eta =
      options.total !== null && perSecond > 0 && done < options.total
        ? ` · ETA ${formatSeconds((options.total - done) / perSecond)}`
        : ''
    const of = options.total === null ? '' : `/${options.total}`
    return `${options.label}: ${done}${of}${detail ? ` · ${detail}` : ''}${rate}${eta}`
  }

  // A spinner needs a terminal that reports its width: ora computes how many lines to clear from
  // it, and a pseudo-terminal reporting 0 columns made it emit endless clear-line sequences.
  if (stream.isTTY && ((stream.columns as number | undefined) ?? 0) > 0) {
    // ora (and its dependencies, ~10 MB) is loaded only when there is a terminal to spin on.
    let spinner: Ora | undefined
    let stopped = false
    let status: string | undefined
    let last = line(0, '')
    const text = () => (status ? `${last}\n  ${status}` : last)
    void import('ora').then(({default: ora}) => {
      // ora colours the frame cyan through chalk, which ignores NO_COLOR: colour is decided here.
      if (!stopped)
        spinner = ora({text: text(), stream, discardStdin: false, ...(colorAllowed() ? {} : {color: false})}).start()
    })
    return {
      update: (done, detail) => {
        last = line(done, detail)
        if (spinner) spinner.text = text()
      },
      status: (next) => {
        status = next
        if (spinner) spinner.text = text()
      },
      stop: () => {
        stopped = true
        spinner?.stop()
      },
    }
  }

  const interval = options.intervalMs ?? 5000
  let lastPrinted = Date.now()
  return {
    update(done, detail) {
      if (Date.now() - lastPrinted < interval) return
      lastPrinted = Date.now()
      stream.write(line(done, detail) + '\n')
    },
    status: printStatus,
    stop() {},
  }
}

/** 42s, 3m05s, 1h02m: an ETA to the second, without a date library. */
export function formatSeconds(seconds: number): string {
  const s = Math.max(0, Math.round(seconds))
  if (s < 60) return `${s}s`
  const pad = (n: number) => String(n).padStart(2, '0')
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`
  return `${Math.floor(s / 3600)}h${pad(Math.floor((s % 3600) / 60))}m`
}
