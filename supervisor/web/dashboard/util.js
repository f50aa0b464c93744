// Pure helpers of the dashboard: no DOM, no network, so that node can test them too.

// Characters that would let an agent disguise a command or a domain name in the browser:
// C0/C1 controls, bidirectional overrides and isolates, zero-width and other invisible marks.
const HIDDEN_RE =
	/[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\ufff9-\ufffb]/gu;
const NAMED = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

// The text with every hidden character written as an escape (\n, \x1b, \u{202e}).
export function visible(s) {
	if (typeof s !== 'string') return '';
	return s.replace(HIDDEN_RE, (c) => {
		if (NAMED[c]) return NAMED[c];
		const cp = c.codePointAt(0);
		if (cp < 0x100) return '\\x' + cp.toString(16).padStart(2, '0');
		return '\\u{' + cp.toString(16) + '}';
	});
}

// Whether visible() would change S: the UI flags such strings.
export function hasHidden(s) {
	return typeof s === 'string' && s.search(HIDDEN_RE) >= 0;
}

// At most MAX characters of S, and how many were left out.
export function clip(s, max) {
	const chars = Array.from(s);
	if (chars.length <= max) return { text: s, omitted: 0 };
	return { text: chars.slice(0, max).join(''), omitted: chars.length - max };
}

// The host of "host", "host:port", "[v6]" or "[v6]:port", lower-cased.
export function domainHost(summary) {
	if (typeof summary !== 'string') return '';
	if (summary.startsWith('[')) {
		const end = summary.indexOf(']');
		return (end > 0 ? summary.slice(1, end) : summary).toLowerCase();
	}
	const first = summary.indexOf(':');
	if (first >= 0 && first === summary.lastIndexOf(':')) return summary.slice(0, first).toLowerCase();
	return summary.toLowerCase();
}

function isIpLiteral(host) {
	return /^[0-9.]+$/.test(host) || host.includes(':');
}

// The wildcard pattern the server would store for a domain request: api.example.com gives
// *.example.com. None for names of fewer than three labels (no "*.com"), for addresses, and
// for anything that is not a DNS name (the agent chooses what it connects to).
export function wildcardOf(summary) {
	const host = domainHost(summary);
	if (!host || isIpLiteral(host)) return null;
	const labels = host.split('.');
	if (labels.length < 3 || !labels.every((l) => /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/.test(l)))
		return null;
	return '*.' + labels.slice(1).join('.');
}

// "4m 32s", "58s", "1h 5m"; for what is left until a deadline.
export function formatDuration(ms) {
	let s = Math.max(0, Math.ceil(ms / 1000));
	const h = Math.floor(s / 3600);
	s -= h * 3600;
	const m = Math.floor(s / 60);
	s -= m * 60;
	if (h > 0) return `${h}h ${m}m`;
	if (m > 0) return `${m}m ${s}s`;
	return `${s}s`;
}

// The countdown text of a card: "expires in 4m 32s", "expiring…", or "" without a deadline.
export function countdownText(expiresMs, nowMs) {
	if (typeof expiresMs !== 'number' || !Number.isFinite(expiresMs)) return '';
	const left = expiresMs - nowMs;
	if (left <= 0) return 'expiring…';
	return `expires in ${formatDuration(left)}`;
}

function pad2(n) {
	return String(n).padStart(2, '0');
}

// 14:32:05 in the browser's time zone.
export function formatClock(ms) {
	if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
	const d = new Date(ms);
	return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

// When an item was created, in epoch ms (created_ms, else its RFC 3339 timestamp).
export function createdMs(item) {
	if (typeof item.created_ms === 'number') return item.created_ms;
	const t = Date.parse(item.timestamp);
	return Number.isFinite(t) ? t : 0;
}

// Newest first; ties by id so that the order is stable.
export function comparePending(a, b) {
	const d = createdMs(b) - createdMs(a);
	if (d !== 0) return d;
	return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

// The delay before reconnect attempt N (1, 2, …): 1 s, 2 s, 4 s, … at most 30 s, with up to
// 20 % jitter from RANDOM (a number in [0, 1)) so that many tabs do not retry in step.
export function backoffDelay(attempt, random = 0) {
	const base = Math.min(30000, 1000 * 2 ** Math.max(0, Math.min(attempt - 1, 5)));
	return Math.round(base * (1 + 0.2 * random));
}

// How many failed attempts in a row turn "reconnecting" into "cannot connect".
export const OFFLINE_AFTER = 3;

// The banner for a connection state: null when connected.
export function bannerFor(connected, failures) {
	if (connected) return null;
	if (failures >= OFFLINE_AFTER)
		return { level: 'error', text: '✗ Cannot connect to Cloister - Is it running?' };
	return { level: 'warning', text: '⚠ Connection lost - Reconnecting…' };
}

// The banner while the page has no session: everything but the page itself answers 401 until
// it is opened through the supervisor's login link (which sets the session cookie). ORIGIN is
// the page's own, to show what the link looks like.
export function loginBanner(origin) {
	return {
		level: 'error',
		text: '✗ Not logged in - open the login link the supervisor printed',
		detail: `It looks like ${origin}/?token=… and is on the supervisor's terminal (run -v prints it too). Then press Retry.`,
	};
}

// The one-line summary of a request item: its command or its domain.
export function itemSummary(item) {
	if (!item) return '';
	if (item.type === 'domain') return item.domain ?? item.summary ?? '';
	return item.cmd ?? item.summary ?? '';
}

// The confirmation after this page decided a command request.
export function commandConfirmation(allow, item, reason, response) {
	const what = visible(itemSummary(item));
	// The scope the server says it applied: a server without scopes answers without one, and
	// then the decision covered this ask only, whatever the button said.
	const scope = typeof response?.scope === 'string' ? response.scope : 'once';
	const tail = scope === 'once' ? '' : ` (${scopeText(scope)})`;
	const out = allow
		? { level: 'success', text: `✓ Approved: ${what}${tail}`, detail: '' }
		: { level: 'denied', text: `✗ Denied: ${what}${tail}`, detail: reason ? `Reason: ${visible(reason)}` : '' };
	if (response?.persistence_error)
		out.warning = `Not saved: ${visible(String(response.persistence_error))}. It holds for this session only.`;
	return out;
}

// How a decision's scope reads in a sentence: "once", "this session", "project scope", …
export function scopeText(scope) {
	switch (scope) {
		case 'once':
			return 'once';
		case 'session':
			return 'session scope';
		case 'project':
			return 'project scope';
		case 'global':
			return 'global scope';
		default:
			return `${visible(String(scope))} scope`;
	}
}

// The body of POST /approve/ID or /deny/ID for a command card (team contract: no body, or
// {scope, match, pattern, reason}). MATCH is what a wider scope covers: "exact" (this command),
// "program" (any arguments) or "pattern" (PATTERN, as the person edited it).
export function commandDecisionBody(scope, match, pattern, reason) {
	const body = { scope, match: scope === 'once' ? 'exact' : match };
	if (body.match === 'pattern') body.pattern = pattern;
	if (reason) body.reason = reason;
	return body;
}

// The body of POST /approve/ID or /deny/ID for a file card: a file decision covers its path,
// so no match or pattern (the server refuses a program or pattern for a file).
export function fileDecisionBody(scope, reason) {
	const body = { scope };
	if (reason) body.reason = reason;
	return body;
}

// The one card keyboard shortcuts act on: the selected one, else the only one shown.
export function shortcutTarget(selected, shown) {
	if (selected) return selected;
	return shown.length === 1 ? shown[0] : null;
}

// Whether a card that just arrived deserves a system notification: the tab is in the
// background and the person allowed them.
export function wantsNotification(live, hidden, permission) {
	return Boolean(live && hidden && permission === 'granted');
}

// The confirmation after this page decided a domain request, from the server's answer.
export function domainConfirmation(allow, item, response) {
	const scope = response?.scope || 'once';
	const target = visible(response?.pattern || domainHost(itemSummary(item)));
	const lines = [];
	if (allow) lines.push('Request forwarded to agent.');
	else if (scope !== 'once')
		lines.push(
			`All future requests to ${response?.pattern ? 'these domains' : 'this domain'} will be denied${
				scope === 'session' ? ' for this session' : ''
			}.`,
		);
	const out = {
		level: allow ? 'success' : 'denied',
		text: `${allow ? '✓ Allowed' : '✗ Blocked'} ${target} (${scope} scope)`,
		detail: lines.join(' '),
	};
	if (response?.persistence_error)
		out.warning = `Not saved to the ${scope} decisions: ${visible(
			String(response.persistence_error),
		)}. The decision holds for this session only.`;
	return out;
}

// The notice for a request that left the queue without this page's decision.
export function removalNotice(ev) {
	const what = visible(ev.summary || ev.id || '');
	switch (ev.status) {
		case 'timed_out':
			return { level: 'timeout', text: `⏱ Timed out: ${what}` };
		case 'cancelled':
			return { level: 'info', text: `Cancelled: ${what}`, detail: 'The asking process went away.' };
		case 'approved':
			return {
				level: 'success',
				text: `✓ Approved: ${what}`,
				detail: ev.decided_by ? `Decided by ${visible(ev.decided_by)}.` : '',
			};
		case 'denied':
			return {
				level: 'denied',
				text: `✗ Denied: ${what}`,
				detail: ev.decided_by ? `Decided by ${visible(ev.decided_by)}.` : '',
			};
		default:
			return { level: 'info', text: `Removed: ${what}` };
	}
}

// How long something has run: "1m 5s", "0s"; whole seconds elapsed, never negative.
export function elapsedText(startedMs, nowMs) {
	if (typeof startedMs !== 'number' || !Number.isFinite(startedMs)) return '';
	return formatDuration(Math.floor(Math.max(0, nowMs - startedMs) / 1000) * 1000);
}

// The kind of a running command as the page names it; anything unknown is a "command".
export function runningKind(kind) {
	return kind === 'hostexec' || kind === 'shim' ? kind : 'command';
}

// A running command from GET /running or a command-started event, checked and normalised;
// null when it cannot be shown. NOWMS stands in for a missing or bad "started".
export function runningItem(raw, nowMs) {
	if (!raw || typeof raw !== 'object' || typeof raw.id !== 'string' || raw.id === '') return null;
	const started = Date.parse(raw.started);
	return {
		id: raw.id,
		kind: runningKind(raw.kind),
		cloister: typeof raw.cloister === 'string' ? raw.cloister : '',
		cmd: typeof raw.cmd === 'string' ? raw.cmd : '',
		started: Number.isFinite(started) ? raw.started : '',
		startedMs: Number.isFinite(started) ? started : nowMs,
	};
}

// The notice after this page asked to cancel a running command, from the server's answer.
export function cancelNotice(item, res) {
	const what = visible(item?.cmd || item?.id || '');
	if (res?.ok) return { level: 'info', text: `■ Cancelled: ${what}` };
	if (res?.status === 404)
		return {
			level: 'info',
			text: `Already finished: ${what}`,
			detail: 'It was no longer running, so there was nothing to cancel.',
		};
	return {
		level: 'error',
		text: `Could not cancel ${what}`,
		detail: visible(String(res?.data?.error || (res?.status ? `HTTP ${res.status}` : 'no answer'))),
	};
}

// Whether a key event comes from somewhere the user types (shortcuts must not fire there).
export function isTypingTarget(el) {
	if (!el || typeof el !== 'object') return false;
	const tag = (el.tagName || '').toLowerCase();
	if (tag === 'textarea' || tag === 'select') return true;
	if (tag === 'input') {
		const type = (el.type || 'text').toLowerCase();
		return !['checkbox', 'radio', 'button', 'submit', 'reset', 'range', 'color'].includes(type);
	}
	return Boolean(el.isContentEditable);
}

// The label of a log line's verdict, and its colour class.
export function verdictClass(verdict) {
	switch (verdict) {
		case 'allow':
		case 'approved':
		case 'allowed':
			return 'ok';
		case 'deny':
		case 'denied':
		case 'timed_out':
		case 'killed':
			return 'bad';
		case 'ask':
			return 'ask';
		default:
			return 'neutral';
	}
}

// Parse JSON that the server sent, or null.
export function parseJson(text) {
	try {
		const v = JSON.parse(text);
		return v && typeof v === 'object' ? v : null;
	} catch {
		return null;
	}
}
