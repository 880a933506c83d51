// node scripts/conformance-summary.mjs CACHE_TESTS_DIR RESULTS_JSON
// Counts required and optional tests passed outright, honouring each test's depends_on as
// the suite's own summary does, and lists the required tests that do not pass. Tests for
// browser caches only are not run against a shared cache and are not counted.
import fs from 'fs'
import path from 'path'
import { pathToFileURL } from 'url'

const [dir, resultsFile] = process.argv.slice(2)
const tests = (await import(pathToFileURL(path.join(dir, 'tests/index.mjs')))).default
const { determineTestResult, resultTypes } = await import(pathToFileURL(path.join(dir, 'test-engine/lib/results.mjs')))
const results = JSON.parse(fs.readFileSync(resultsFile, 'utf8'))

const tally = { required: [0, 0], optimal: [0, 0], check: [0, 0] }
const failing = []
for (const suite of tests) {
  for (const test of suite.tests) {
    if (test.browser_only === true) continue
    const kind = test.kind || 'required'
    const outcome = determineTestResult(tests, test.id, results)
    const passed = outcome === resultTypes.pass || outcome === resultTypes.yes
    tally[kind][1]++
    if (passed) tally[kind][0]++
    else if (kind === 'required') {
      const why = outcome === resultTypes.dependency_fail ? 'dependency failed: ' + (test.depends_on || []).join(', ')
        : Array.isArray(results[test.id]) ? results[test.id].join(': ') : outcome[2]
      failing.push(`  ${suite.id} / ${test.id}: ${why}`)
    }
  }
}
console.log(`required tests passed: ${tally.required[0]} of ${tally.required[1]}`)
console.log(`optional tests passed: ${tally.optimal[0]} of ${tally.optimal[1]}`)
console.log(`checks answered yes:   ${tally.check[0]} of ${tally.check[1]}`)
if (failing.length) {
  console.log('required tests failing:')
  for (const line of failing) console.log(line)
}
