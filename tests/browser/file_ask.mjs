// File write asks (fs.ask: on-write) on the dashboard, in headless Chromium, against a running
// `cloister-supervisor run --ask web`. Run by tests/integration/browser_file_ask.sh, which
// starts the supervisor and reads the TAP lines this prints (numbered from $TAP_START).
//
// The agent writes three files outside fs.write, one after the other, once RESULT_DIR/go
// exists (and ends once RESULT_DIR/done does): FILE_PROJECT (approved here for the project), FILE_GLOBAL (for every project) and
// FILE_DENY (denied once, with a reason). Each card must offer the exec cards' scope buttons to
// allow, Deny once only (a file denial is for that write), and nothing about what a scope
// covers (a file decision covers its path).
//
// Environment: DASHBOARD_URL, DASHBOARD_LOGIN, RESULT_DIR, ARTIFACTS, FILE_PROJECT,
// FILE_GLOBAL, FILE_DENY, TAP_START.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assert, check, eq, exitStatus, launch, need, readIn, tap, until as untilMs, watchdog } from './harness.mjs';

const LOGIN_ = need('DASHBOARD_LOGIN');
const URL_ = need('DASHBOARD_URL');
const AUTH = { Authorization: `Bearer ${new URL(LOGIN_).searchParams.get('token')}` };
const RESULT_DIR = need('RESULT_DIR');
const ARTIFACTS = need('ARTIFACTS');
const FILES = { project: need('FILE_PROJECT'), global: need('FILE_GLOBAL'), deny: need('FILE_DENY') };
watchdog(90000);

// This test waits 15 s unless it says otherwise.
const until = (fn, what, ms = 15000) => untilMs(fn, what, ms);
const readResult = (name) => readIn(RESULT_DIR, name);

mkdirSync(ARTIFACTS, { recursive: true });
const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
context.setDefaultTimeout(10000);
const page = await context.newPage();
const problems = [];
page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
page.on('console', (m) => {
	if (m.type() === 'error') problems.push(`console: ${m.text()}`);
});

const card = (text) => page.locator('#pending-list > li.card', { hasText: text });
const notices = () => page.locator('#notices .notice').allTextContents();
const noticeMatching = (re) => until(async () => (await notices()).find((t) => re.test(t)), `a notice matching ${re}`);
// The scopes a card's group offers, in order: [data-action=approve] or [data-action=deny].
const scopesOf = (c, action) =>
	c.locator(`button[data-action=${action}]`).evaluateAll((bs) => bs.map((b) => b.dataset.scope));

try {
	await main();
} catch (e) {
	tap(false, 'the browser test went through', e && e.stack ? e.stack : String(e));
} finally {
	writeFileSync(join(RESULT_DIR, 'done'), '');
	await browser.close().catch(() => {});
}
process.exit(exitStatus());

async function main() {
	await check('the dashboard loads and connects', async () => {
		const res = await page.goto(LOGIN_, { waitUntil: 'domcontentloaded' });
		eq(res.status(), 200, 'status of /');
		await until(async () => (await page.locator('#conn-text').textContent()) === 'Connected', 'Connected');
		writeFileSync(join(RESULT_DIR, 'go'), '');
	});

	const first = card(FILES.project);
	await check('a write outside fs.write shows as a file card: the path, the process, no cover choice', async () => {
		await until(async () => (await first.count()) === 1, `the card for ${FILES.project}`);
		eq(await first.evaluate((li) => li.classList.contains('card-file')), true, 'class card-file');
		const text = await first.textContent();
		assert(/File write request/.test(text), `title: ${text}`);
		assert(text.includes(FILES.project), 'the path');
		assert(/pid \d+/.test(text), `the process: ${text}`);
		eq(await first.locator('fieldset.cover').count(), 0, 'no "a wider scope covers" choice');
		eq(await first.locator('input.reason').count(), 1, 'a reason field');
	});

	await check('its buttons: Approve once, session, project, global; Deny once only', async () => {
		eq(await scopesOf(first, 'approve'), ['once', 'session', 'project', 'global'], 'approve scopes');
		eq(await scopesOf(first, 'deny'), ['once'], 'deny scopes');
		// The exec cards' wording, one home for both.
		eq(
			await first.locator('button[data-action=approve]').allTextContents(),
			['Once', 'Session', 'Project', 'Global'],
			'button texts',
		);
		const label = await first.locator('button[data-action=approve][data-scope=project]').getAttribute('aria-label');
		eq(label, `Approve for the project: ${FILES.project}`, 'aria-label');
		await page.screenshot({ path: join(ARTIFACTS, 'file-card.png'), fullPage: true });
	});

	await check('Approve → Project: the write lands and the page says project scope', async () => {
		await first.locator('button[data-action=approve][data-scope=project]').click();
		await until(() => /^project 0$/m.test(readResult('status')), 'the agent wrote the file');
		await noticeMatching(new RegExp(`Approved: .*${FILES.project.replace(/[.]/g, '\\.')} \\(project scope\\)`));
		const warned = (await notices()).filter((t) => /Not saved/.test(t));
		eq(warned, [], 'no persistence warning');
	});

	const second = card(FILES.global);
	await check('Approve → Global on the next file card', async () => {
		await until(async () => (await second.count()) === 1, `the card for ${FILES.global}`);
		await second.locator('button[data-action=approve][data-scope=global]').click();
		await until(() => /^global 0$/m.test(readResult('status')), 'the agent wrote the second file');
		await noticeMatching(/\(global scope\)/);
	});

	const third = card(FILES.deny);
	await check('the API refuses a file denial wider than once, and the card stays', async () => {
		await until(async () => (await third.count()) === 1, `the card for ${FILES.deny}`);
		const id = await third.getAttribute('data-id');
		const res = await fetch(`${URL_}/deny/${id}`, {
			method: 'POST',
			headers: { ...AUTH, 'Content-Type': 'application/json' },
			body: JSON.stringify({ scope: 'session' }),
		});
		eq(res.status, 400, 'status');
		const body = await res.json();
		assert(/denied once only/.test(body.error), `error: ${body.error}`);
		eq(await third.count(), 1, 'the card is still up');
	});

	await check('Deny once with a reason: the write fails', async () => {
		await third.locator('input.reason').fill('not your file');
		await third.locator('button[data-action=deny][data-scope=once]').click();
		await until(() => /^deny [1-9]/m.test(readResult('status')), 'the agent saw the write fail');
		await noticeMatching(/Denied: .*Reason: not your file/);
	});

	await check('no page errors', async () => {
		eq(problems, [], 'page errors and console errors');
	});
}
