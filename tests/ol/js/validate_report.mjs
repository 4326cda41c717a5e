// Validates ol's --json reports against Stryker's official schema
// (mutation-testing-report-schema, draft-07) with ajv, both pinned by
// tests/ol/js/package-lock.json. Prints each file's verdict; exit 1 when
// any report is invalid (with ajv's errors), 2 on a usage error.
//   node validate_report.mjs REPORT.json...
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

const require = createRequire(import.meta.url);
const schemaFile = require.resolve(
  'mutation-testing-report-schema/mutation-testing-report-schema.json');
const schema = JSON.parse(readFileSync(schemaFile, 'utf8'));
// the package.json beside dist/src/ (the package exports no ./package.json)
const packageFile = new URL('../../package.json', `file://${schemaFile}`);
const version = JSON.parse(readFileSync(packageFile, 'utf8')).version;

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node validate_report.mjs REPORT.json...');
  process.exit(2);
}
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validate = ajv.compile(schema);
let bad = 0;
for (const file of files) {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  if (validate(report)) {
    console.log(`valid ${file} (mutation-testing-report-schema ${version})`);
  } else {
    bad++;
    console.log(`INVALID ${file}:`);
    for (const e of validate.errors) {
      console.log(`  ${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
    }
  }
}
process.exit(bad ? 1 : 0);
