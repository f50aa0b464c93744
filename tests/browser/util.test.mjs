// The dashboard's pure helpers (supervisor/web/dashboard/util.js) in node, no browser. Prints TAP.
// Run by tests/integration/browser_util.sh.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
// util.js is an ES module in a folder without a package.json: loaded from a data: URL, node
// takes it as a module whatever its version.
const utilSource = readFileSync(new URL('../../supervisor/web/dashboard/util.js', import.meta.url), 'utf8');
const {
	backoffDelay,
	bannerFor,
	cancelNotice,
	clip,
	commandConfirmation,
	commandDecisionBody,
	fileDecisionBody,
	comparePending,
	countdownText,
	domainConfirmation,
	domainHost,
	elapsedText,
	formatDuration,
	hasHidden,
	isTypingTarget,
	loginBanner,
	OFFLINE_AFTER,
	parseJson,
	removalNotice,
	runningItem,
	runningKind,
	visible,
	wildcardOf,
	scopeText,
	shortcutTarget,
	wantsNotification,
} = await import(`data:text/javascript;charset=utf-8,${encodeURIComponent(utilSource)}`);

let n = 0;
let failed = 0;

function test(name, fn) {
	n++;
	try {
		fn();
		console.log(`ok ${n} - ${name}`);
	} catch (e) {
		failed++;
		console.log(`not ok ${n} - ${name}`);
		for (const line of String(e.stack || e).split('\n').slice(0, 15)) console.log(`# ${line}`);
	}
}

test('wildcardOf: one label off the front, none for two labels, addresses or non-DNS names', () => {
	assert.equal(wildcardOf('api.example.com'), '*.example.com');
	assert.equal(wildcardOf('api.example.com:443'), '*.example.com');
	assert.equal(wildcardOf('assets.cdn.example.com'), '*.cdn.example.com');
	assert.equal(wildcardOf('API.Example.COM'), '*.example.com');
	assert.equal(wildcardOf('example.com'), null);
	assert.equal(wildcardOf('example.com:8080'), null);
	assert.equal(wildcardOf('localhost'), null);
	assert.equal(wildcardOf('10.1.2.3'), null);
	assert.equal(wildcardOf('10.1.2.3:443'), null);
	assert.equal(wildcardOf('[2001:db8::1]:443'), null);
	assert.equal(wildcardOf('a..example.com'), null);
	assert.equal(wildcardOf('<img src=x>.evil.test'), null);
	assert.equal(wildcardOf('\u202egoogle.evil.test'), null);
	assert.equal(wildcardOf('-bad.example.com'), null);
	assert.equal(wildcardOf(''), null);
	assert.equal(wildcardOf(undefined), null);
});

test('domainHost strips the port and the brackets of an IPv6 address', () => {
	assert.equal(domainHost('example.com:443'), 'example.com');
	assert.equal(domainHost('[::1]:8080'), '::1');
	assert.equal(domainHost('::1'), '::1');
	assert.equal(domainHost('Example.com'), 'example.com');
});

test('visible writes controls, bidi overrides and invisible characters as escapes', () => {
	assert.equal(visible('rm -rf /'), 'rm -rf /');
	assert.equal(visible('a\nb\tc\r'), 'a\\nb\\tc\\r');
	assert.equal(visible('\x1b[31mred'), '\\x1b[31mred');
	assert.equal(visible('evil\u202egnp.exe'), 'evil\\u{202e}gnp.exe');
	assert.equal(visible('zero\u200bwidth\ufeff'), 'zero\\u{200b}width\\u{feff}');
	assert.equal(visible('\u2066iso\u2069'), '\\u{2066}iso\\u{2069}');
	assert.equal(visible('soft\u00adhyphen'), 'soft\\xadhyphen');
	assert.equal(visible('ünïcödé ✓ 日本'), 'ünïcödé ✓ 日本');
	assert.equal(visible(null), '');
	assert.equal(hasHidden('a\u202eb'), true);
	assert.equal(hasHidden('plain'), false);
	// The regex is global: calling twice must give the same answer.
	assert.equal(hasHidden('a\u202eb'), true);
});

test('clip counts characters, not UTF-16 units', () => {
	assert.deepEqual(clip('abc', 5), { text: 'abc', omitted: 0 });
	assert.deepEqual(clip('abcdef', 4), { text: 'abcd', omitted: 2 });
	assert.deepEqual(clip('😀😀😀', 2), { text: '😀😀', omitted: 1 });
});

test('countdown texts', () => {
	assert.equal(formatDuration(272000), '4m 32s');
	assert.equal(formatDuration(58000), '58s');
	assert.equal(formatDuration(57001), '58s');
	assert.equal(formatDuration(3900000), '1h 5m');
	assert.equal(countdownText(1000 + 59000, 1000), 'expires in 59s');
	assert.equal(countdownText(1000, 1000), 'expiring…');
	assert.equal(countdownText(500, 1000), 'expiring…');
	assert.equal(countdownText(undefined, 1000), '');
});

test('pending requests sort newest first, stably', () => {
	const items = [
		{ id: 'a', created_ms: 1000 },
		{ id: 'b', created_ms: 3000 },
		{ id: 'c', timestamp: '1970-01-01T00:00:02Z' },
		{ id: 'd', created_ms: 3000 },
	];
	assert.deepEqual(
		items.sort(comparePending).map((i) => i.id),
		['d', 'b', 'c', 'a'],
	);
});

test('backoff: 1, 2, 4, 8, 16, 30 s at most, jitter up to 20 %', () => {
	assert.deepEqual(
		[1, 2, 3, 4, 5, 6, 7, 50].map((a) => backoffDelay(a)),
		[1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000],
	);
	assert.equal(backoffDelay(1, 0.999), 1200);
	assert.equal(backoffDelay(0), 1000);
});

test('banner: none when connected, yellow then red after repeated failures', () => {
	assert.equal(bannerFor(true, 5), null);
	assert.deepEqual(bannerFor(false, 1), { level: 'warning', text: '⚠ Connection lost - Reconnecting…' });
	assert.equal(bannerFor(false, OFFLINE_AFTER - 1).level, 'warning');
	assert.deepEqual(bannerFor(false, OFFLINE_AFTER), {
		level: 'error',
		text: '✗ Cannot connect to Cloister - Is it running?',
	});
});

test('without a session the banner says to open the login link, and what it looks like', () => {
	const b = loginBanner('http://127.0.0.1:9999');
	assert.equal(b.level, 'error');
	assert.match(b.text, /Not logged in - open the login link/);
	assert.match(b.detail, /http:\/\/127\.0\.0\.1:9999\/\?token=…/);
	assert.match(b.detail, /Retry/);
});

test('confirmations follow guardian-api.md', () => {
	const cmd = { type: 'command', cmd: 'docker compose up -d' };
	assert.equal(commandConfirmation(true, cmd).text, '✓ Approved: docker compose up -d');
	assert.equal(commandConfirmation(false, cmd, 'no').detail, 'Reason: no');
	const dom = { type: 'domain', domain: 'api.newservice.com:443' };
	assert.equal(
		domainConfirmation(true, dom, { status: 'approved', scope: 'project' }).text,
		'✓ Allowed api.newservice.com (project scope)',
	);
	const blocked = domainConfirmation(false, dom, { status: 'denied', scope: 'global' });
	assert.equal(blocked.text, '✗ Blocked api.newservice.com (global scope)');
	assert.equal(blocked.detail, 'All future requests to this domain will be denied.');
	assert.equal(
		domainConfirmation(true, dom, { scope: 'project', pattern: '*.newservice.com' }).text,
		'✓ Allowed *.newservice.com (project scope)',
	);
	assert.equal(domainConfirmation(false, dom, { scope: 'once' }).detail, '');
	const failedWrite = domainConfirmation(true, dom, { scope: 'global', persistence_error: 'EROFS\u202e' });
	assert.match(failedWrite.warning, /^Not saved to the global decisions: EROFS\\u\{202e\}\./);
	assert.equal(removalNotice({ status: 'timed_out', summary: 'api.newservice.com' }).text, '⏱ Timed out: api.newservice.com');
	assert.equal(removalNotice({ status: 'approved', summary: 'ls', decided_by: 'tty' }).detail, 'Decided by tty.');
});

test('file decisions: the scope and the reason only (a file decision covers its path)', () => {
	assert.deepEqual(fileDecisionBody('once', ''), { scope: 'once' });
	assert.deepEqual(fileDecisionBody('project', ''), { scope: 'project' });
	assert.deepEqual(fileDecisionBody('global', 'for npm'), { scope: 'global', reason: 'for npm' });
});

test('command decisions: the body of each scope and cover, and what the server applied', () => {
	assert.deepEqual(commandDecisionBody('once', 'pattern', 'x *', ''), { scope: 'once', match: 'exact' });
	assert.deepEqual(commandDecisionBody('session', 'exact', '', ''), { scope: 'session', match: 'exact' });
	assert.deepEqual(commandDecisionBody('project', 'program', 'ignored', 'ok'), {
		scope: 'project',
		match: 'program',
		reason: 'ok',
	});
	assert.deepEqual(commandDecisionBody('global', 'pattern', '/usr/bin/git status*', ''), {
		scope: 'global',
		match: 'pattern',
		pattern: '/usr/bin/git status*',
	});
	const cmd = { type: 'command', cmd: 'git push' };
	// A server without scopes answers without one: the notice says what happened, not the button.
	assert.equal(commandConfirmation(true, cmd, '', { status: 'approved' }).text, '✓ Approved: git push');
	assert.equal(
		commandConfirmation(true, cmd, '', { status: 'approved', scope: 'project' }).text,
		'✓ Approved: git push (project scope)',
	);
	const denied = commandConfirmation(false, cmd, 'no', { scope: 'session' });
	assert.equal(denied.text, '✗ Denied: git push (session scope)');
	assert.equal(denied.detail, 'Reason: no');
	assert.match(commandConfirmation(true, cmd, '', { scope: 'global', persistence_error: 'EROFS' }).warning, /^Not saved: EROFS/);
	assert.equal(scopeText('session'), 'session scope');
	assert.equal(scopeText('project'), 'project scope');
	assert.equal(scopeText('once'), 'once');
	assert.equal(scopeText('x\u202e'), 'x\\u{202e} scope');
});

test('shortcuts act on the selected card, else on the only one shown', () => {
	assert.equal(shortcutTarget('a', ['b', 'c']), 'a');
	assert.equal(shortcutTarget(null, ['b']), 'b');
	assert.equal(shortcutTarget(null, ['b', 'c']), null);
	assert.equal(shortcutTarget(null, []), null);
});

test('system notifications: only for a live card, in a background tab, when granted', () => {
	assert.equal(wantsNotification(true, true, 'granted'), true);
	assert.equal(wantsNotification(false, true, 'granted'), false);
	assert.equal(wantsNotification(true, false, 'granted'), false);
	assert.equal(wantsNotification(true, true, 'default'), false);
	assert.equal(wantsNotification(true, true, 'denied'), false);
});

test('running commands: elapsed time, kinds, items checked, cancel notices', () => {
	assert.equal(elapsedText(1000, 1000 + 65999), '1m 5s');
	assert.equal(elapsedText(1000, 1000 + 999), '0s');
	assert.equal(elapsedText(5000, 1000), '0s');
	assert.equal(elapsedText(0, 3900000), '1h 5m');
	assert.equal(elapsedText(undefined, 1000), '');
	assert.equal(runningKind('hostexec'), 'hostexec');
	assert.equal(runningKind('shim'), 'shim');
	assert.equal(runningKind('x" onclick="y'), 'command');
	assert.deepEqual(
		runningItem({ id: 'r1', kind: 'shim', cloister: 'box', cmd: 'make', started: '1970-01-01T00:00:10Z' }, 99),
		{ id: 'r1', kind: 'shim', cloister: 'box', cmd: 'make', started: '1970-01-01T00:00:10Z', startedMs: 10000 },
	);
	const noTime = runningItem({ id: 'r2', kind: 'hostexec', cmd: 7 }, 1234);
	assert.deepEqual(noTime, { id: 'r2', kind: 'hostexec', cloister: '', cmd: '', started: '', startedMs: 1234 });
	assert.equal(runningItem({ id: '' }, 0), null);
	assert.equal(runningItem({ id: 3 }, 0), null);
	assert.equal(runningItem(null, 0), null);
	const item = { id: 'r1', cmd: 'sleep 100\u202e' };
	assert.deepEqual(cancelNotice(item, { ok: true, status: 200 }), { level: 'info', text: '■ Cancelled: sleep 100\\u{202e}' });
	const gone = cancelNotice(item, { ok: false, status: 404, data: { error: 'no running command with that id' } });
	assert.equal(gone.text, 'Already finished: sleep 100\\u{202e}');
	assert.match(gone.detail, /no longer running/);
	const failed = cancelNotice({ id: 'r3' }, { ok: false, status: 0, data: { error: 'the guardian did not answer' } });
	assert.equal(failed.level, 'error');
	assert.equal(failed.text, 'Could not cancel r3');
	assert.equal(failed.detail, 'the guardian did not answer');
	assert.equal(cancelNotice(item, { ok: false, status: 500 }).detail, 'HTTP 500');
});

test('isTypingTarget: text fields and editable content, not buttons or checkboxes', () => {
	assert.equal(isTypingTarget({ tagName: 'INPUT', type: 'text' }), true);
	assert.equal(isTypingTarget({ tagName: 'INPUT', type: 'search' }), true);
	assert.equal(isTypingTarget({ tagName: 'INPUT', type: 'checkbox' }), false);
	assert.equal(isTypingTarget({ tagName: 'TEXTAREA' }), true);
	assert.equal(isTypingTarget({ tagName: 'SELECT' }), true);
	assert.equal(isTypingTarget({ tagName: 'DIV', isContentEditable: true }), true);
	assert.equal(isTypingTarget({ tagName: 'BUTTON' }), false);
	assert.equal(isTypingTarget(null), false);
});

test('parseJson: objects only, never throws', () => {
	assert.deepEqual(parseJson('{"a":1}'), { a: 1 });
	assert.equal(parseJson('nope'), null);
	assert.equal(parseJson('3'), null);
	assert.equal(parseJson('null'), null);
});

test("the dashboard's scripts never parse strings as HTML or code (comments aside)", () => {
	const dir = new URL('../../supervisor/web/dashboard/', import.meta.url);
	const sinks =
		/\.(innerHTML|outerHTML)\s*\+?=|insertAdjacentHTML|document\.write|createContextualFragment|DOMParser|(^|[^.\w])eval\s*\(|new\s+Function|setHTML|srcdoc/;
	const found = [];
	for (const f of readdirSync(dir).filter((f) => f.endsWith('.js') || f.endsWith('.html'))) {
		readFileSync(new URL(f, dir), 'utf8')
			.split('\n')
			.forEach((line, i) => {
				if (/^\s*(\/\/|\*|\/\*)/.test(line)) return;
				if (sinks.test(line)) found.push(`${f}:${i + 1}: ${line.trim()}`);
			});
	}
	assert.deepEqual(found, []);
	// And the page loads no script or style but its own files (the CSP says so too).
	const html = readFileSync(new URL('index.html', dir), 'utf8');
	assert.doesNotMatch(html, /<script(?![^>]*\ssrc="\/static\/)[^>]*>/);
	assert.doesNotMatch(html, /\sstyle=|<style|\son[a-z]+=|https?:\/\//);
});

console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
