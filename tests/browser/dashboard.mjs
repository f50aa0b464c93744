// The dashboard in headless Chromium, against a running `cloister-supervisor run --ask web`.
// Run by tests/integration/browser_dashboard.sh, which starts the supervisor and reads the TAP
// lines this prints (numbered from $TAP_START). In order: domain cards (synthetic, through
// page.route), a real exec ask approved and a second one denied, keyboard, filter, screenshots;
// the Running panel (synthetic /running, /cancel and, in a second tab, /events, all through
// page.route: no real command runs here);
// the supervisor killed (SIGTERM): the connection banner; a second supervisor on the same
// address (CONTROL_DIR/restart-wanted, then CONTROL_DIR/restarted holds its URL): Retry fetches
// its waiting ask, which times out; the sandbox's pause, resume and kill.
//
// Environment: DASHBOARD_URL, SV_PID (the first supervisor), RESULT_DIR (the first agent waits
// for RESULT_DIR/go and writes its results there), CONTROL_DIR, ARTIFACTS (screenshots),
// SANDBOX (the first sandbox's --name), AGENT_CWD (its working directory), TAP_START.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assert, check, eq, exitStatus, launch, need, readIn, tap, until, watchdog } from './harness.mjs';

const URL_ = need('DASHBOARD_URL');
// The link that logs the page in: the session cookie everything but the page itself needs.
const LOGIN_ = need('DASHBOARD_LOGIN');
// The same token for our own requests to the API (as the CLI sends it).
const AUTH = { Authorization: `Bearer ${new URL(LOGIN_).searchParams.get('token')}` };
const RESULT_DIR = need('RESULT_DIR');
const ARTIFACTS = need('ARTIFACTS');
const SANDBOX = need('SANDBOX');
const CONTROL_DIR = need('CONTROL_DIR');
const SV_PID = Number(process.env.SV_PID || 0);
const PEER_RESULT_DIR = need('PEER_RESULT_DIR');
watchdog(150000);

const readControl = (name) => readIn(CONTROL_DIR, name);
const readPeer = (name) => readIn(PEER_RESULT_DIR, name);
const readResult = (name) => readIn(RESULT_DIR, name);

mkdirSync(ARTIFACTS, { recursive: true });
const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
context.setDefaultTimeout(10000);
// What the page does with notifications, seen from inside: how often it asked for the
// permission, and each notification it raised; and a switch that puts the tab in the
// background (document.hidden), which a headless tab never is by itself.
await context.addInitScript(() => {
	const seen = { asked: 0, shown: [] };
	window.__notify = seen;
	Object.defineProperty(document, 'hidden', { configurable: true, get: () => window.__hidden === true });
	const Real = window.Notification;
	if (typeof Real !== 'function') return;
	class Recorded extends Real {
		constructor(title, options) {
			seen.shown.push({ title, body: options?.body || '' });
			super(title, options);
		}
		static get permission() {
			return Real.permission;
		}
		static requestPermission(...a) {
			seen.asked++;
			return Real.requestPermission(...a);
		}
	}
	window.Notification = Recorded;
});
const page = await context.newPage();
const problems = []; // page errors, CSP violations, console errors
let expectOffline = false;
page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
page.on('console', (m) => {
	if (m.type() !== 'error' || expectOffline) return;
	// The 404 the test provokes on purpose: Chromium logs every failed load as an error.
	if (/status of 404/.test(m.text()) && m.location().url.endsWith('/cancel/r1npm')) return;
	problems.push(`console: ${m.text()}`);
});
let navigations = 0;
page.on('framenavigated', (f) => {
	if (f === page.mainFrame()) navigations++;
});

const notices = () => page.locator('#notices .notice').allTextContents();
const noticeMatching = (re, ms = 10000) =>
	until(async () => (await notices()).find((t) => re.test(t)), `a notice matching ${re}`, ms);
const card = (text) => page.locator('#pending-list > li.card', { hasText: text });

async function connected() {
	await until(async () => (await page.locator('#conn-text').textContent()) === 'Connected', 'Connected');
}

try {
	await main();
} catch (e) {
	tap(false, 'the browser test went through', e && e.stack ? e.stack : String(e));
} finally {
	await browser.close().catch(() => {});
}
process.exit(exitStatus());

// In the page: every element with its own visible text whose contrast against the background
// behind it is below AA. Disabled controls are exempt, as WCAG 1.4.3 allows.
function contrastFailures() {
	const rgba = (c) => {
		const m = c.match(/rgba?\(([^)]+)\)/);
		if (!m) return [0, 0, 0, 1];
		const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
		return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
	};
	const lum = ([r, g, b]) => {
		const f = (v) => {
			v /= 255;
			return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
		};
		return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
	};
	const over = (top, bottom) => {
		const a = top[3];
		return [0, 1, 2].map((i) => top[i] * a + bottom[i] * (1 - a)).concat(1);
	};
	// The opaque colour behind EL: its backgrounds and its ancestors', composed.
	const background = (el) => {
		const layers = [];
		for (let e = el; e; e = e.parentElement) {
			const c = rgba(getComputedStyle(e).backgroundColor);
			if (c[3] > 0) layers.push(c);
			if (c[3] >= 1) break;
		}
		let bg = [255, 255, 255, 1];
		for (const c of layers.reverse()) bg = over(c, bg);
		return bg;
	};
	const out = [];
	for (const el of document.querySelectorAll('body *')) {
		if (el.closest('[disabled], dialog:not([open]), .visually-hidden')) continue;
		const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
		if (!own || !el.getClientRects().length) continue;
		const cs = getComputedStyle(el);
		if (cs.visibility === 'hidden') continue;
		let opacity = 1;
		for (let e = el; e; e = e.parentElement) opacity *= Number(getComputedStyle(e).opacity);
		const bg = background(el);
		const fg = over(rgba(cs.color).slice(0, 3).concat(rgba(cs.color)[3] * opacity), bg);
		const [l1, l2] = [lum(fg), lum(bg)].sort((a, b) => b - a);
		const ratio = (l1 + 0.05) / (l2 + 0.05);
		const size = parseFloat(cs.fontSize);
		const large = size >= 24 || (size >= 18.66 && Number(cs.fontWeight) >= 700);
		if (ratio < (large ? 3 : 4.5))
			out.push(`${el.tagName}.${el.className} "${el.textContent.trim().slice(0, 30)}" ${ratio.toFixed(2)}:1`);
	}
	return out.slice(0, 10);
}

// ---- main ------------------------------------------------------------------------------------

async function main() {
	const now = Date.now();
	const domain = (id, name, ageS, cloister = SANDBOX) => ({
		id,
		cloister,
		project: '',
		domain: name,
		timestamp: new Date(now - ageS * 1000).toISOString().replace(/\.\d+Z$/, 'Z'),
		expires: new Date(now + 60000).toISOString().replace(/\.\d+Z$/, 'Z'),
		expires_ms: now + 60000,
		created_ms: now - ageS * 1000,
		type: 'domain',
		kind: 'domain',
	});
	// The proxy that makes real domain asks is not there yet: synthetic ones, served to the page.
	const domains = [
		{
			...domain('d0api', 'api.example.com:443', 10),
			pid: 4242,
			uid: 1000,
			exe: '/usr/bin/curl',
			args: ['curl', '-s', 'https://api.example.com/v1'],
			cwd: '/home/u/proj',
		},
		domain('d1apex', 'example.com', 20),
		domain('d2evil', '<img src=x onerror="window.__xss=1">.\u202eevil.test', 30),
		domain('d3other', 'sub.other.test', 40, 'other-box'),
	];
	const posted = [];
	await page.route('**/pending-domains', (route) =>
		route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ requests: domains }) }),
	);
	await page.route(/\/(approve|deny)-domain\/[^/]+$/, (route) => {
		const req = route.request();
		const m = /\/(approve|deny)-domain\/([^/]+)$/.exec(new URL(req.url()).pathname);
		const body = JSON.parse(req.postData() || 'null');
		posted.push({ action: m[1], id: m[2], body, type: req.headers()['content-type'], method: req.method() });
		const i = domains.findIndex((d) => d.id === m[2]);
		if (i >= 0) domains.splice(i, 1);
		const res = { status: m[1] === 'approve' ? 'approved' : 'denied', scope: body.scope };
		if (body.wildcard) res.pattern = '*.example.com';
		if (m[2] === 'd1apex') res.persistence_error = 'cannot write global.yaml: disk full';
		return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(res) });
	});
	// Commands that run now (approved host commands, shim calls): synthetic too. Cancelling
	// r0make succeeds; r1npm has finished meanwhile, so the server answers 404.
	const iso = (ms) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
	const running = [
		{ id: 'r1npm', kind: 'shim', cloister: 'other-box', cmd: 'npm install <b>x</b>', started: iso(now - 5000) },
		{ id: 'r0make', kind: 'hostexec', cloister: SANDBOX, cmd: 'make -j2 test', started: iso(now - 65000) },
	];
	const cancels = [];
	await page.route('**/running', (route) =>
		route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ running }) }),
	);
	await page.route(/\/cancel\/[^/]+$/, (route) => {
		const req = route.request();
		const id = decodeURIComponent(/\/cancel\/([^/]+)$/.exec(new URL(req.url()).pathname)[1]);
		cancels.push({ id, method: req.method(), type: req.headers()['content-type'] });
		const i = running.findIndex((r) => r.id === id);
		if (i >= 0) running.splice(i, 1);
		if (id !== 'r0make')
			return route.fulfill({ status: 404, contentType: 'application/json', body: '{"error":"no running command with that id"}' });
		return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ status: 'cancelled', id }) });
	});
	const runRow = (id) => page.locator(`#running-list > li[data-id="${id}"]`);

	await check('without the login link: the API answers 401 and the page says to open the link', async () => {
		for (const path of ['/pending', '/events', '/logs', '/status', '/metrics']) {
			const r = await fetch(`${URL_}${path}`);
			eq(r.status, 401, `GET ${path} without the token`);
			assert((await r.json()).error, `a JSON error for ${path}`);
		}
		const anon = await browser.newContext({ viewport: { width: 1280, height: 900 } });
		try {
			const p = await anon.newPage();
			const errors = [];
			p.on('pageerror', (e) => errors.push(e.message));
			const res = await p.goto(URL_, { waitUntil: 'domcontentloaded' });
			eq(res.status(), 200, 'status of the page itself');
			await until(async () => (await p.locator('#conn-text').textContent()) === 'Not logged in', '"Not logged in"');
			eq(await p.locator('#banner').getAttribute('data-level'), 'error', 'banner level');
			assert(/open the login link/.test(await p.locator('#banner-text').textContent()), 'banner text');
			assert((await p.locator('#banner-detail').textContent()).includes(`${URL_}/?token=`), 'what the link looks like');
			eq(await p.locator('#log-state').textContent(), 'Not logged in.', 'the log panel says so too');
			await p.screenshot({ path: join(ARTIFACTS, 'not-logged-in.png') });
			// The link, opened in that same tab, logs it in.
			await p.goto(LOGIN_, { waitUntil: 'domcontentloaded' });
			await until(async () => (await p.locator('#conn-text').textContent()) === 'Connected', 'Connected after the link');
			eq(errors, [], 'page errors');
		} finally {
			await anon.close();
		}
	});

	await check('the dashboard loads and connects to the event stream', async () => {
		const res = await page.goto(LOGIN_, { waitUntil: 'domcontentloaded' });
		eq(res.status(), 200, 'status of /');
		await connected();
	});

	await check('landmarks: banner, main, contentinfo; one h1; labelled sections', async () => {
		eq(await page.locator('header').count(), 1, 'header');
		eq(await page.locator('main').count(), 1, 'main');
		eq(await page.locator('footer').count(), 1, 'footer');
		eq(await page.locator('h1').count(), 1, 'h1');
		for (const name of ['Pending requests', 'Running', 'Sandboxes', 'Recent decisions', 'Audit log'])
			assert(
				(await page.getByRole('region', { name: new RegExp(`^${name}`) }).count()) === 1,
				`a region named ${name}`,
			);
		assert((await page.locator('[aria-live]').count()) >= 2, 'live regions for banners and notices');
	});

	await check('the synthetic domain requests show as cards, newest first', async () => {
		await until(async () => (await page.locator('#pending-list > li.card-domain').count()) === 4, '4 domain cards');
		const ids = await page.locator('#pending-list > li').evaluateAll((els) => els.map((e) => e.dataset.id));
		eq(ids, ['d0api', 'd1apex', 'd2evil', 'd3other'], 'order of the cards');
		const first = await card('api.example.com').textContent();
		assert(/Domain request/i.test(first) && /expires in (\d+m )?\d+s/.test(first), `card text: ${first}`);
	});

	await check('a domain card names the process that connected: pid, executable, argv, directory', async () => {
		const facts = await page.locator('li[data-id="d0api"] dl.facts').textContent();
		assert(facts.includes('Processpid 4242, uid 1000'), `pid in ${facts}`);
		assert(facts.includes('Executable/usr/bin/curl'), `exe in ${facts}`);
		assert(facts.includes('Directory/home/u/proj'), `cwd in ${facts}`);
		const args = await page.locator('li[data-id="d0api"] .argv .arg-text').allTextContents();
		eq(args, ['curl', '-s', 'https://api.example.com/v1'], 'argument chips');
	});

	await check('notifications: nothing asked on load; "Notify me" asks on a click, granted in this context', async () => {
		const b = page.locator('#notify-button');
		eq(await b.textContent(), 'Notify me', 'the button before');
		eq(await page.evaluate(() => window.__notify.asked), 0, 'permission requests on load');
		await context.grantPermissions(['notifications'], { origin: URL_ });
		await b.click();
		await until(async () => (await b.textContent()) === 'Notifications on', '"Notifications on"');
		eq(await page.evaluate(() => window.__notify.asked), 1, 'permission requests after the click');
		eq(await page.evaluate(() => Notification.permission), 'granted', 'permission');
		eq(await page.evaluate(() => window.__notify.shown.length), 0, 'notifications for cards of a visible tab');
	});

	await check('agent text stays text: no element from a hostile domain name, bidi override shown as an escape', async () => {
		const c = card('evil.test');
		eq(await c.locator('img').count(), 0, 'img elements in the card');
		eq(await page.evaluate(() => window.__xss), undefined, 'window.__xss');
		const text = await c.locator('.domain').textContent();
		assert(text.includes('<img src=x onerror="window.__xss=1">'), `shown literally: ${text}`);
		assert(text.includes('\\u{202e}') && !text.includes('\u202e'), `bidi override escaped: ${text}`);
	});

	await check('the wildcard checkbox shows the pattern, and is absent for a two-label name', async () => {
		const label = await card('api.example.com').locator('label', { hasText: 'wildcard' }).textContent();
		eq(label.trim(), 'Apply to wildcard pattern: *.example.com', 'label');
		const apex = page.locator('li[data-id="d1apex"]');
		eq(await apex.locator('input[type=checkbox]').count(), 0, 'checkbox on example.com');
		eq(await apex.locator('button[data-scope]').count(), 8, 'Allow/Deny × 4 scopes');
	});

	await check('the sandbox filter shows one sandbox only', async () => {
		await page.selectOption('#sandbox-filter', 'other-box');
		await until(async () => (await page.locator('#pending-list > li:not([hidden])').count()) === 1, 'one card');
		eq(await page.locator('#pending-list > li:not([hidden])').getAttribute('data-id'), 'd3other', 'visible card');
		eq((await page.locator('#pending-count').textContent()).trim(), '1 of 4', 'count');
		await page.selectOption('#sandbox-filter', '');
		await until(async () => (await page.locator('#pending-list > li:not([hidden])').count()) === 4, 'all cards again');
	});

	await check('the Running panel lists /running, oldest first, with kind, sandbox, elapsed time and a named Cancel', async () => {
		await until(async () => (await page.locator('#running-list > li').count()) === 2, 'two running rows');
		const ids = await page.locator('#running-list > li').evaluateAll((els) => els.map((e) => e.dataset.id));
		eq(ids, ['r0make', 'r1npm'], 'order of the rows');
		eq((await page.locator('#running-count').textContent()).trim(), '2', 'count');
		const make = runRow('r0make');
		eq(await make.locator('.kind').textContent(), 'hostexec', 'kind');
		eq(await make.locator('.cmd').textContent(), 'make -j2 test', 'command');
		assert((await make.locator('.run-meta').textContent()).includes(SANDBOX), 'the sandbox is named');
		const e1 = await make.locator('.run-elapsed').textContent();
		assert(/^running for 1m \d+s$/.test(e1), `elapsed: ${e1}`);
		await until(async () => (await make.locator('.run-elapsed').textContent()) !== e1, 'the elapsed time to tick', 3000);
		eq(await page.getByRole('button', { name: 'Cancel make -j2 test', exact: true }).count(), 1, 'named Cancel button');
		eq(await page.getByRole('list', { name: 'Commands running now' }).count(), 1, 'a labelled list');
		const npm = runRow('r1npm');
		eq(await npm.locator('b').count(), 0, 'no <b> element from the command');
		eq(await npm.locator('.cmd').textContent(), 'npm install <b>x</b>', 'shown as text');
	});

	await check('the sandbox filter applies to the Running panel', async () => {
		await page.selectOption('#sandbox-filter', 'other-box');
		await until(async () => (await page.locator('#running-list > li:not([hidden])').count()) === 1, 'one row');
		eq(await page.locator('#running-list > li:not([hidden])').getAttribute('data-id'), 'r1npm', 'visible row');
		eq((await page.locator('#running-count').textContent()).trim(), '1 of 2', 'count');
		await page.selectOption('#sandbox-filter', '');
		await until(async () => (await page.locator('#running-list > li:not([hidden])').count()) === 2, 'both rows again');
	});

	// The agent asks only now, so the card can only come through the event stream.
	writeFileSync(join(RESULT_DIR, 'go'), '');
	const cmd = card('first');
	await check('a real exec ask appears without a reload', async () => {
		await cmd.waitFor({ timeout: 15000 });
		eq(navigations, 1, 'page loads');
		const ids = await page.locator('#pending-list > li').evaluateAll((els) => els.map((e) => e.dataset.id));
		eq(ids.slice(1), ['d0api', 'd1apex', 'd2evil', 'd3other'], 'the new card is first');
		await until(
			async () =>
				(await page.locator('#announcer').textContent()) ===
				`New command request from ${SANDBOX}: printf '%s\\n' first '<b>x</b>' 'a b' ''`,
			'the screen-reader announcement (aria-live)',
			3000,
		);
	});

	await check('the exec card shows each argument, the executable, cwd, and a countdown', async () => {
		const args = await cmd.locator('.argv > li').evaluateAll((els) =>
			els.map((e) => (e.querySelector('.arg-text') || e.querySelector('.arg-empty')).textContent),
		);
		eq(args, ['/usr/bin/printf', '%s\\n', 'first', '<b>x</b>', 'a b', '(empty)'], 'argument chips');
		eq(await cmd.locator('b').count(), 0, 'no <b> element from argv');
		const facts = await cmd.locator('dl.facts').textContent();
		assert(facts.includes('/usr/bin/printf'), `executable: ${facts}`);
		assert(facts.includes(`Directory${process.env.AGENT_CWD}`), `cwd in ${facts}`);
		assert(facts.includes('Branchbrowser-branch'), `the worktree's branch in ${facts}`);
		assert(facts.includes('Agentsh'), `the agent (run's command) in ${facts}`);
		const c1 = await cmd.locator('.countdown').textContent();
		assert(/^expires in (\d+m )?\d+s$/.test(c1), `countdown: ${c1}`);
		await until(async () => (await cmd.locator('.countdown').textContent()) !== c1, 'the countdown to tick', 3000);
	});

	await page.screenshot({ path: join(ARTIFACTS, 'desktop.png'), fullPage: true });
	await check('text contrast meets WCAG AA (4.5:1, large text 3:1)', async () => {
		await page.waitForTimeout(1600); // the highlight of a new card fades
		eq(await page.evaluate(contrastFailures), [], 'text below AA');
	});
	await check('at 360 px wide nothing scrolls sideways', async () => {
		await page.setViewportSize({ width: 360, height: 800 });
		await page.waitForTimeout(200);
		const w = await page.evaluate(() => document.documentElement.scrollWidth);
		await page.screenshot({ path: join(ARTIFACTS, 'mobile-360.png'), fullPage: true });
		assert(w <= 360, `scrollWidth ${w}`);
		const wide = await page.evaluate(() =>
			[...document.querySelectorAll('body *')]
				.filter((e) => e.getBoundingClientRect().right > 361 && e.getClientRects().length)
				.map((e) => e.tagName + '.' + e.className)
				.slice(0, 5),
		);
		eq(wide, [], 'elements past the right edge');
		await page.setViewportSize({ width: 1280, height: 900 });
	});

	await check('Cancel posts /cancel/ID: "■ Cancelled" after the 200; 404 says it had finished; focus stays in the list', async () => {
		await page.getByRole('button', { name: 'Cancel make -j2 test', exact: true }).click();
		await until(() => cancels.length === 1, 'the POST');
		eq(cancels[0], { id: 'r0make', method: 'POST', type: 'application/json' }, 'request');
		await until(async () => (await runRow('r0make').count()) === 0, 'the row to go');
		await noticeMatching(/^■ Cancelled: make -j2 test/);
		eq(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Cancel npm install <b>x</b>', 'focus on the next Cancel');
		await page.keyboard.press('Enter');
		await until(() => cancels.length === 2, 'the second POST');
		eq(cancels[1].id, 'r1npm', 'second request');
		await noticeMatching(/^Already finished: npm install <b>x<\/b>It was no longer running/);
		await until(async () => (await runRow('r1npm').count()) === 0, 'the finished row to go');
		eq(await page.evaluate(() => document.activeElement.id), 'running-heading', 'focus on the heading');
		assert(await page.locator('#running-empty').isVisible(), 'the empty text');
		eq((await page.locator('#running-count').textContent()).trim(), '0', 'count');
	});

	await check('j / k move the selection; a on a domain card allows it once', async () => {
		await page.locator('#pending-heading').focus();
		await page.keyboard.press('j');
		eq(await page.locator('li.card.selected').getAttribute('data-id'), await cmd.getAttribute('data-id'), 'j: first');
		await page.keyboard.press('j');
		await page.keyboard.press('j');
		await page.keyboard.press('k');
		eq(await page.locator('li.card.selected').getAttribute('data-id'), 'd0api', 'j j k: second');
		eq(await page.evaluate(() => document.activeElement.dataset.id), 'd0api', 'focus follows');
		await page.keyboard.press('j');
		await page.keyboard.press('j');
		eq(await page.locator('li.card.selected').getAttribute('data-id'), 'd2evil', 'j j: fourth');
		await page.keyboard.press('a');
		await until(() => posted.length === 1, 'the POST');
		eq(posted[0], { action: 'approve', id: 'd2evil', body: { scope: 'once', wildcard: false }, type: 'application/json', method: 'POST' }, 'request');
		await until(async () => (await page.locator('li[data-id="d2evil"]').count()) === 0, 'the card to go');
		await noticeMatching(/^✓ Allowed .*evil\.test \(once scope\)/);
	});

	await check('wildcard + Allow → Project posts {"scope":"project","wildcard":true}', async () => {
		const c = page.locator('li[data-id="d0api"]');
		await c.locator('input[type=checkbox]').check();
		await c.locator('button[data-action=allow][data-scope=project]').click();
		await until(() => posted.length === 2, 'the POST');
		eq(posted[1].action + ' ' + posted[1].id, 'approve d0api', 'endpoint');
		eq(posted[1].body, { scope: 'project', wildcard: true }, 'body');
		await noticeMatching(/^✓ Allowed \*\.example\.com \(project scope\)Request forwarded to agent\./);
	});

	await check('Deny → Global posts {"scope":"global","wildcard":false}; a persistence_error is shown', async () => {
		await page.locator('li[data-id="d1apex"] button[data-action=deny][data-scope=global]').click();
		await until(() => posted.length === 3, 'the POST');
		eq(posted[2].action + ' ' + posted[2].id, 'deny d1apex', 'endpoint');
		eq(posted[2].body, { scope: 'global', wildcard: false }, 'body');
		const t = await noticeMatching(/^✗ Blocked example\.com \(global scope\)/);
		assert(t.includes('disk full'), `persistence error in: ${t}`);
	});

	await check('Deny → Session on an unchecked wildcard posts wildcard false', async () => {
		await page.locator('li[data-id="d3other"] button[data-action=deny][data-scope=session]').click();
		await until(() => posted.length === 4, 'the POST');
		eq(posted[3].body, { scope: 'session', wildcard: false }, 'body');
		await noticeMatching(/^✗ Blocked sub\.other\.test \(session scope\)/);
	});

	await check('shortcuts do not fire while typing in the reason field', async () => {
		const reason = cmd.getByLabel('Reason');
		await reason.click();
		await reason.pressSequentially('a d j k ?');
		await page.waitForTimeout(300);
		eq(await cmd.count(), 1, 'the card is still there');
		eq(await page.locator('dialog[open]').count(), 0, 'no dialog');
		eq(await reason.inputValue(), 'a d j k ?', 'typed text');
		await reason.fill('checked by the browser test');
	});

	await check('Approve runs the agent\'s command', async () => {
		await cmd.locator('button[data-action=approve][data-scope=once]').click();
		await noticeMatching(/^✓ Approved: printf '%s\\n' first '<b>x<\/b>' 'a b' ''/);
		await until(() => /^first 0$/m.test(readResult('status')), 'the agent to report "first 0"', 10000);
		eq(readResult('first'), 'first\n<b>x</b>\na b\n\n', 'what printf wrote');
		await until(async () => (await cmd.count()) === 0, 'the card to go');
	});

	const second = card('second');
	await check('Deny with a reason makes the second exec fail', async () => {
		await second.waitFor({ timeout: 15000 });
		await second.getByLabel('Reason').fill('not today');
		await second.locator('button[data-action=deny][data-scope=once]').click();
		await noticeMatching(/^✗ Denied: printf '%s\\n' secondReason: not today/);
		const status = await until(() => /^second \d+$/m.exec(readResult('status')), 'the agent to report "second N"');
		assert(status[0] !== 'second 0', `the denied exec failed: ${status[0]}`);
		eq(readResult('second'), '', 'nothing written by the denied command');
	});

	// The exec card's scopes, each against the real server: what the page posts (the team's
	// contract: {scope, match, pattern, reason}) and what the agent gets. The third ask comes
	// while the tab is in the background: a system notification.
	const decided = [];
	page.on('request', (req) => {
		const m = /\/(approve|deny)\/([0-9a-f]+)$/.exec(new URL(req.url()).pathname);
		if (m && req.method() === 'POST' && new URL(req.url()).origin === URL_) decided.push({ action: m[1], body: JSON.parse(req.postData() || 'null') });
	});
	const third = card('third');
	await check('a card that arrives while the tab is in the background raises a system notification', async () => {
		await page.evaluate(() => {
			window.__hidden = true;
		});
		writeFileSync(join(RESULT_DIR, 'go2'), '');
		await third.waitFor({ timeout: 15000 });
		const shown = await until(async () => (await page.evaluate(() => window.__notify.shown))[0], 'a notification');
		eq(shown.title, `Cloister: Command request from ${SANDBOX}`, 'title');
		assert(shown.body.includes('third'), `body: ${shown.body}`);
		await page.evaluate(() => {
			window.__hidden = false;
		});
	});

	await check('the exec card offers Approve/Deny × Once/Session/Project/Global and what a wider scope covers', async () => {
		for (const action of ['approve', 'deny'])
			for (const scope of ['once', 'session', 'project', 'global'])
				eq(await third.locator(`button[data-action=${action}][data-scope=${scope}]`).count(), 1, `${action} ${scope}`);
		const covers = await third.locator('.cover input[type=radio]').evaluateAll((els) => els.map((e) => `${e.value}${e.checked ? '*' : ''}`));
		eq(covers, ['exact*', 'program', 'pattern'], 'covers, exact first and checked');
		assert((await third.locator('.cover').textContent()).includes('/usr/bin/printf'), 'the program is named');
		eq(await third.locator('.pattern-input').inputValue(), 'printf **', 'the pattern, prefilled from "suggested"');
		await page.locator('section.pending').screenshot({ path: join(ARTIFACTS, 'exec-card-scopes.png') });
	});

	await check('Approve → Session on "this exact command" posts {"scope":"session","match":"exact"}; the command runs', async () => {
		await third.locator('button[data-action=approve][data-scope=session]').click();
		await until(() => decided.length === 1, 'the POST');
		eq(decided[0], { action: 'approve', body: { scope: 'session', match: 'exact' } }, 'request');
		await until(() => /^third 0$/m.test(readResult('status')), 'the agent to report "third 0"', 10000);
	});

	const fourth = card('fourth');
	await check('keyboard: Tab reaches "this program", Deny → Project posts {"scope":"project","match":"program"}', async () => {
		await fourth.waitFor({ timeout: 15000 });
		await fourth.locator('input[type=radio][value=program]').focus();
		await page.keyboard.press('Space');
		eq(await fourth.locator('input[type=radio][value=program]').isChecked(), true, 'program chosen by keyboard');
		await fourth.locator('button[data-action=deny][data-scope=project]').focus();
		await page.keyboard.press('Enter');
		await until(() => decided.length === 2, 'the POST');
		eq(decided[1].action, 'deny', 'endpoint');
		eq(decided[1].body.scope + ' ' + decided[1].body.match, 'project program', 'body');
		const status = await until(() => /^fourth \d+$/m.exec(readResult('status')), 'the agent to report "fourth N"');
		assert(status[0] !== 'fourth 0', `the denied exec failed: ${status[0]}`);
	});

	const fifth = card('fifth');
	await check('an edited pattern, Approve → Global, posts {"scope":"global","match":"pattern","pattern":…}', async () => {
		await fifth.waitFor({ timeout: 15000 });
		await fifth.locator('.pattern-input').fill('echo fif*');
		eq(await fifth.locator('input[type=radio][value=pattern]').isChecked(), true, 'editing chose the pattern');
		await fifth.locator('button[data-action=approve][data-scope=global]').click();
		await until(() => decided.length === 3, 'the POST');
		eq(decided[2], { action: 'approve', body: { scope: 'global', match: 'pattern', pattern: 'echo fif*' } }, 'request');
		await until(() => /^fifth 0$/m.test(readResult('status')), 'the agent to report "fifth 0"', 10000);
	});

	await check('with one card left and none selected, "a" approves it (no j first)', async () => {
		const sixth = card('sixth');
		await sixth.waitFor({ timeout: 15000 });
		await page.locator('#pending-heading').focus();
		eq(await page.locator('li.card.selected').count(), 0, 'selected cards');
		const only = await page.locator('#pending-list > li:not([hidden])').count();
		eq(only, 1, 'cards shown');
		await page.keyboard.press('a');
		await until(() => decided.length === 4, 'the POST');
		eq(decided[3], { action: 'approve', body: { scope: 'once', match: 'exact' } }, 'request');
		await until(() => /^sixth 0$/m.test(readResult('status')), 'the agent to report "sixth 0"', 10000);
	});

	// Another run of the same user: its ask shows here, naming its run, and is decided on its
	// own supervisor from this page.
	const peerCard = card('from-peer');
	const peerPosts = [];
	page.on('request', (req) => {
		if (req.method() === 'POST' && new URL(req.url()).origin !== URL_) peerPosts.push(req.url());
	});
	await check('the aggregated view: the other run\'s ask shows on this page, naming its run; Approve runs it there', async () => {
		writeFileSync(join(PEER_RESULT_DIR, 'go'), '');
		await peerCard.waitFor({ timeout: 20000 });
		eq(await peerCard.locator('.card-cloister').textContent(), 'browser-peer', 'the run named on the card');
		await peerCard.locator('button[data-action=approve][data-scope=once]').click();
		await until(() => /^peer 0$/m.test(readPeer('status')), 'the peer\'s agent to report "peer 0"', 10000);
		eq(readPeer('out'), 'from-peer\n', 'what it printed');
		assert(peerPosts.length === 1 && !peerPosts[0].startsWith(URL_), `posted to the peer: ${peerPosts}`);
		await until(async () => (await peerCard.count()) === 0, 'the card to go');
	});

	await check('the aggregated view also lists the other run\'s sandbox, decision and audit line, each naming its run', async () => {
		const sb = page.locator('#sandbox-list > li[data-name="browser-peer"]');
		await until(async () => (await sb.count()) === 1, 'the other run\'s sandbox', 15000);
		eq(await sb.locator('.run-name').textContent(), 'run browser-peer', 'the sandbox names its run');
		assert(/running/.test(await sb.textContent()), await sb.textContent());
		await until(
			async () =>
				(await page.locator('#decision-list > li').allTextContents()).some(
					(t) => t.includes('from-peer') && t.includes('run browser-peer') && /✓ Approved/.test(t),
				),
			'the other run\'s decision, naming its run',
		);
		await until(
			async () =>
				(await page.locator('#log-list > li').allTextContents()).some(
					(t) => t.includes('from-peer') && t.includes('run browser-peer'),
				),
			'the other run\'s audit line, naming its run',
		);
	});

	await check('recent decisions list the approval and the denial with its reason', async () => {
		// The list follows the decisions a moment after each (one refresh per burst).
		const decisionsText = () => page.locator('#decision-list > li').allTextContents();
		await until(
			async () => (await decisionsText()).some((t) => t.includes('sixth')),
			'the decisions up to the sixth ask',
		);
		const items = await decisionsText();
		// Each decision names its scope: a session approval says so, not "project scope".
		const third = items.find((t) => t.includes("printf '%s\\n' third"));
		assert(third && third.includes('session scope') && !third.includes('project scope'), `third: ${third}`);
		const fourth = items.find((t) => t.includes('true fourth'));
		assert(fourth && /✗ Denied/.test(fourth), `fourth: ${fourth}`);
		const older = items.filter((t) => /printf '%s\\n' (first|second)/.test(t));
		items.splice(0, items.length, ...older);
		assert(/^✗ Denied printf '%s\\n' second/.test(items[0]) && items[0].includes('Reason: not today') && items[0].includes('by web'), `newest: ${items[0]}`);
		assert(/^✓ Approved printf '%s\\n' first/.test(items[1]) && items[1].includes('Reason: checked by the browser test'), `older: ${items[1]}`);
	});

	await check('the audit log panel streams the asks', async () => {
		await until(async () => {
			const rows = await page.locator('#log-list > li').allTextContents();
			return rows.some((r) => /approved.*printf '%s\\n' first/.test(r)) && rows.some((r) => /denied.*printf '%s\\n' second/.test(r));
		}, 'approved and denied lines in the log panel');
	});

	await check('the sandbox panel shows the running sandbox', async () => {
		const sb = page.locator(`#sandbox-list > li[data-name="${SANDBOX}"]`);
		await sb.waitFor();
		assert(/running/.test(await sb.textContent()), await sb.textContent());
		eq(await sb.getByRole('button', { name: `Pause ${SANDBOX}` }).count(), 1, 'Pause button');
	});

	await check('Running, live: command-started adds a row, command-finished removes it, a reconnect fetches /running again', async () => {
		// A second tab whose event stream is synthetic: each connection gets one event, then
		// ends, and the page reconnects (about 1 s later) and fetches /running again.
		const p2 = await context.newPage();
		try {
			const live = { id: 'r5live', kind: 'shim', cloister: SANDBOX, cmd: 'cargo build' };
			const stay = { id: 'r6stay', kind: 'hostexec', cloister: SANDBOX, cmd: 'sleep 300', started: iso(Date.now() - 3000) };
			let streams = 0;
			let fetches = 0;
			// Later answers still list r5live, as a server could just before it ends: only the
			// event may take it away.
			await p2.route('**/running', (route) => {
				fetches++;
				const list = fetches === 1 ? [stay] : [stay, { ...live, started: iso(Date.now() - 2000) }];
				return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ running: list }) });
			});
			await p2.route('**/events', (route) => {
				streams++;
				const [name, data] = streams === 1 ? ['command-started', live] : ['command-finished', { ...live, status: 'exited' }];
				return route.fulfill({
					status: 200,
					headers: { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' },
					body: `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`,
				});
			});
			await p2.goto(LOGIN_, { waitUntil: 'domcontentloaded' });
			const row = (id) => p2.locator(`#running-list > li[data-id="${id}"]`);
			await row('r6stay').waitFor();
			await row('r5live').waitFor();
			eq(await row('r5live').locator('.cmd').textContent(), 'cargo build', 'the row from the event');
			assert(/^running for \d+s$/.test(await row('r5live').locator('.run-elapsed').textContent()), 'elapsed from the event');
			await until(() => streams >= 2 && fetches >= 2, 'a reconnect and a second GET /running', 8000);
			await until(async () => (await row('r5live').count()) === 0, 'command-finished to remove the row', 5000);
			eq(await row('r6stay').count(), 1, 'the other row stays');
		} finally {
			await p2.close();
		}
	});

	await check('? opens the shortcut help, Escape closes it and focus returns', async () => {
		await page.locator('#pending-heading').focus();
		await page.keyboard.press('?');
		await page.locator('#help-dialog[open]').waitFor();
		eq(await page.evaluate(() => document.activeElement.id), 'help-close', 'focus in the dialog');
		await page.keyboard.press('Escape');
		await until(async () => (await page.locator('dialog[open]').count()) === 0, 'the dialog to close');
		eq(await page.evaluate(() => document.activeElement.id), 'pending-heading', 'focus back');
	});

	await check('every control has an accessible name; no page errors or CSP violations', async () => {
		const unnamed = await page.evaluate(() =>
			[...document.querySelectorAll('button, input, select')]
				.filter((e) => {
					if (e.labels && e.labels.length) return false;
					return !(e.getAttribute('aria-label') || e.textContent.trim());
				})
				.map((e) => e.outerHTML.slice(0, 80)),
		);
		eq(unnamed, [], 'controls without a name');
		eq(problems, [], 'page errors');
	});

	await check('the supervisor killed: "Connection lost - Reconnecting" banner', async () => {
		assert(SV_PID > 0, 'SV_PID');
		expectOffline = true;
		process.kill(SV_PID, 'SIGTERM');
		await until(
			async () =>
				(await page.locator('#banner').isVisible()) &&
				/^⚠ Connection lost - Reconnecting…$/.test(await page.locator('#banner-text').textContent()),
			'the yellow banner',
			10000,
		);
		eq(await page.locator('#banner').getAttribute('data-level'), 'warning', 'level');
		await page.screenshot({ path: join(ARTIFACTS, 'reconnecting.png') });
	});

	await check('after repeated failures: red "Cannot connect to Cloister - Is it running?"; Retry keeps it red', async () => {
		await until(async () => (await page.locator('#banner').getAttribute('data-level')) === 'error', 'the red banner', 20000);
		eq(await page.locator('#banner-text').textContent(), '✗ Cannot connect to Cloister - Is it running?', 'text');
		await page.getByRole('button', { name: 'Retry' }).click();
		await page.waitForTimeout(1000);
		eq(await page.locator('#banner').getAttribute('data-level'), 'error', 'level after a failed Retry');
		await page.screenshot({ path: join(ARTIFACTS, 'offline.png') });
		await page.setViewportSize({ width: 360, height: 800 });
		await page.screenshot({ path: join(ARTIFACTS, 'offline-360.png') });
		await page.setViewportSize({ width: 1280, height: 900 });
	});

	await check('with this page\'s supervisor gone, the other run\'s new ask still comes and is decided', async () => {
		writeFileSync(join(PEER_RESULT_DIR, 'go2'), '');
		const c = card('peer-alone');
		await c.waitFor({ timeout: 20000 });
		await c.locator('button[data-action=approve][data-scope=once]').click();
		await until(() => /^peer2 0$/m.test(readPeer('status')), 'the peer\'s agent to report "peer2 0"', 10000);
		await until(async () => (await c.count()) === 0, 'the card to go');
	});

	// A new supervisor on the same address, with an ask already waiting: Retry must bring it in
	// through /pending, since the event stream never announced it to this page.
	writeFileSync(join(CONTROL_DIR, 'restart-wanted'), '');
	const sandbox2 = 'browser-controls';
	const c2 = card('resync');
	await check('Retry once the supervisor is back: the banner goes, the waiting ask is fetched', async () => {
		const again = await until(() => readControl('restarted'), 'the second supervisor', 30000);
		eq(again.trim(), URL_, 'the same address');
		await until(async () => {
			const r = await fetch(`${URL_}/pending`, { headers: AUTH });
			return (await r.json()).requests.some((x) => x.cmd.includes('resync'));
		}, 'the ask on the server', 10000);
		expectOffline = false;
		await page.getByRole('button', { name: 'Retry' }).click();
		await connected();
		await until(async () => !(await page.locator('#banner').isVisible()), 'the banner to go');
		await c2.waitFor({ timeout: 5000 });
		await until(async () => (await page.locator(`#sandbox-list > li[data-name="${sandbox2}"]`).count()) === 1, 'the new sandbox');
	});

	await check('an unanswered ask ends with "⏱ Timed out: …" and leaves the list', async () => {
		await noticeMatching(/^⏱ Timed out: printf resync/, 15000);
		eq(await c2.count(), 0, 'card gone');
		await until(
			async () => /^⏱ Timed out printf resync/.test((await page.locator('#decision-list > li').first().textContent()) || ''),
			'the decision',
		);
	});

	const sb = page.locator(`#sandbox-list > li[data-name="${sandbox2}"]`);
	await check('Pause and Resume change the sandbox state', async () => {
		await sb.getByRole('button', { name: `Pause ${sandbox2}` }).click();
		await until(async () => (await sb.locator('.state').textContent()) === 'paused', 'paused');
		await noticeMatching(/^Paused sandbox browser-controls/);
		await page.screenshot({ path: join(ARTIFACTS, 'paused.png') });
		await sb.getByRole('button', { name: `Resume ${sandbox2}` }).click();
		await until(async () => (await sb.locator('.state').textContent()) === 'running', 'running');
	});

	await check('Kill asks for confirmation: Cancel keeps the sandbox', async () => {
		await sb.getByRole('button', { name: `Kill ${sandbox2}` }).click();
		await page.locator('#kill-dialog[open]').waitFor();
		eq(await page.evaluate(() => document.activeElement.id), 'kill-cancel', 'Cancel has the focus');
		assert((await page.locator('#kill-text').textContent()).includes(sandbox2), 'the dialog names the sandbox');
		await page.locator('#kill-cancel').click();
		await page.waitForTimeout(500);
		eq(await page.locator('dialog[open]').count(), 0, 'closed');
		eq(await sb.locator('.state').textContent(), 'running', 'still running');
		eq(problems, [], 'page errors');
	});

	await check('Kill, confirmed, kills the sandbox', async () => {
		expectOffline = true;
		await sb.getByRole('button', { name: `Kill ${sandbox2}` }).click();
		await page.locator('#kill-dialog[open]').waitFor();
		await page.locator('#kill-confirm').click();
		await noticeMatching(/^Killed sandbox browser-controls/);
		await until(async () => (await sb.locator('.state').textContent()) === 'stopped', 'the sandbox shown stopped');
		eq(await sb.getByRole('button', { name: `Kill ${sandbox2}` }).count(), 0, 'no Kill button on a stopped sandbox');
	});
}
