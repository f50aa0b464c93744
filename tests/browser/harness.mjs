// What the browser tests share: TAP lines numbered from $TAP_START (their runner in
// tests/integration/ prints the plan), a watchdog that bounds the whole test, assertions that
// throw, bounded waits, and headless Chromium (Debian's, never a download) launched one way.
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { chromium } from 'playwright-core';

let tapN = Number(process.env.TAP_START || 1) - 1;
let failures = 0;

// need(NAME): the environment variable NAME; the test cannot run without it.
export function need(name) {
	const v = process.env[name];
	if (!v) {
		console.error(`${basename(process.argv[1])}: ${name} is not set`);
		process.exit(2);
	}
	return v;
}

// Never hang: the whole run is bounded (MS, or $BROWSER_TIMEOUT_MS), whatever the browser does.
export function watchdog(ms) {
	const t = setTimeout(() => {
		console.log(`not ok ${++tapN} - the browser test finished within its time limit`);
		process.exit(3);
	}, Number(process.env.BROWSER_TIMEOUT_MS || ms));
	t.unref();
}

export function tap(ok, name, diag) {
	tapN++;
	if (ok) {
		console.log(`ok ${tapN} - ${name}`);
		return;
	}
	failures++;
	console.log(`not ok ${tapN} - ${name}`);
	if (diag)
		for (const line of String(diag).split('\n').slice(0, 30)) console.log(`# ${line}`);
}

// check(name, async () => { … throw on failure … }): one TAP line. Returns whether it passed.
export async function check(name, fn) {
	try {
		await fn();
		tap(true, name);
		return true;
	} catch (e) {
		tap(false, name, e && e.stack ? e.stack : String(e));
		return false;
	}
}

// The status the test exits with: 1 when a case failed.
export const exitStatus = () => (failures ? 1 : 0);

export function assert(cond, msg) {
	if (!cond) throw new Error(msg);
}

export function eq(got, want, what) {
	const g = JSON.stringify(got);
	const w = JSON.stringify(want);
	if (g !== w) throw new Error(`${what}:\n got:  ${g}\n want: ${w}`);
}

// until(fn, what, ms): fn's first truthy result, tried every 100 ms; throws after MS.
export async function until(fn, what, ms = 10000) {
	const end = Date.now() + ms;
	let last;
	for (;;) {
		try {
			last = await fn();
			if (last) return last;
		} catch (e) {
			last = e;
		}
		if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what} (last: ${last})`);
		await new Promise((r) => setTimeout(r, 100));
	}
}

// readIn(DIR, NAME): the file's text, '' while it does not exist.
export function readIn(dir, name) {
	const p = join(dir, name);
	return existsSync(p) ? readFileSync(p, 'utf8') : '';
}

export const LAUNCH = {
	executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
	args: [
		'--headless',
		'--no-sandbox',
		'--disable-gpu',
		'--disable-background-networking',
		'--disable-component-update',
		'--no-first-run',
	],
	timeout: 30000,
};

export const launch = () => chromium.launch(LAUNCH);
