// The loader-thread half of signalAt.mjs: acts once, as the first module whose URL matches loads.
import {writeSync} from 'node:fs'
import process from 'node:process'

let at = ''
let action = 'kill'
let done = false

export function initialize(data) {
  at = data.at
  action = data.action
}

export async function load(url, context, nextLoad) {
  if (!done && url.includes(at)) {
    done = true
    if (action === 'announce') writeSync(3, `${url}\n`)
    else process.kill(process.pid, 'SIGINT')
  }
  return nextLoad(url, context)
}
