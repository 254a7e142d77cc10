/**
 * The built-in profiles of `airlock --profile NAME` (sandbox, test, pgenv), for knex's own tools.
 * airlock reads the same definitions from src/connection/environments.ts.
 */
import {environments} from './src/connection/environments.js'

export default environments
