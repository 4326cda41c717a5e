// Opens ol's HTML reports in Debian's headless Chromium (/usr/bin/chromium,
// driven by playwright-core, pinned by tests/ol/js/package-lock.json) with a
// fresh profile and no network, and prints what the page shows as JSON:
// the console errors and page errors, the mutant count, each mutant's
// status as the file view marks it, and the test files listed.
//   node render_report.mjs REPORT.html [SCREENSHOT.png]
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const [file, screenshot] = process.argv.slice(2);
if (!file) {
  console.error('usage: node render_report.mjs REPORT.html [SCREENSHOT.png]');
  process.exit(2);
}
const profile = mkdtempSync(join(tmpdir(), 'ol-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  offline: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
});
const errors = [];
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
  page.on('request', (r) => {
    if (!r.url().startsWith('file:')) errors.push(`network: ${r.url()}`);
  });
  await page.goto(`file://${resolve(file)}`);
  // the app renders into shadow roots: playwright's CSS locators pierce them
  const app = 'mutation-test-report-app';
  await page.locator(`${app} mte-metrics-table`).first().waitFor({ timeout: 20000 });
  const deepText = () => page.evaluate(() => {
    const parts = [];
    const walk = (n) => {
      if (n.nodeName === 'SCRIPT' || n.nodeName === 'STYLE') return;
      if (n.nodeType === Node.TEXT_NODE) parts.push(n.textContent);
      if (n.shadowRoot) walk(n.shadowRoot);
      for (const c of n.childNodes) walk(c);
    };
    walk(document.body);
    return parts.join(' ').replace(/\s+/g, ' ');
  });
  const overview = await deepText();
  const shot = (name) => screenshot &&
    page.screenshot({ path: `${screenshot.replace(/\.png$/, '')}-${name}.png`, fullPage: true });
  await shot('overview');
  // the file view of the first source, as a reader gets there: its row's link
  const firstFile = await page.evaluate(() => {
    const app = document.querySelector('mutation-test-report-app');
    return Object.keys(app.report.files)[0];
  });
  const base = firstFile.split('/').pop();
  await page.locator(`${app} mte-metrics-table a`, { hasText: base }).first().click();
  await page.locator(`${app} mte-file [data-mutant-id]`).first().waitFor({ timeout: 20000 });
  // each mutant's mark in the source: its id, and the status in its class and title
  const marks = await page.evaluate(() => {
    const found = [];
    const walk = (n) => {
      if (n.nodeType === Node.ELEMENT_NODE && n.hasAttribute('data-mutant-id')) {
        found.push({ id: n.getAttribute('data-mutant-id'), title: n.getAttribute('title') || '',
                     class: n.getAttribute('class') || '' });
      }
      if (n.shadowRoot) walk(n.shadowRoot);
      for (const c of n.childNodes) walk(c);
    };
    walk(document.body);
    return found;
  });
  const fileText = await deepText();
  await shot('file');
  // the tests tab: the student's test files and tests
  await page.locator(`${app} a`, { hasText: 'Tests' }).first().click();
  await page.locator(`${app} mte-test-view`).first().waitFor({ timeout: 20000 });
  const testsText = await deepText();
  const title = await page.title();
  const shown = { errors, title, overview, file: firstFile, marks, fileText, testsText };
  console.log(JSON.stringify(shown));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
