// The loader-thread half of moduleLog.mjs: appends the URL of each ES module as it loads.
import {appendFileSync} from 'node:fs'

let file = ''

export function initialize(data) {
  file = data.file
}

export async function load(url, context, nextLoad) {
  appendFileSync(file, `${url}\n`)
  return nextLoad(url, context)
}
