// The Cloister dashboard: pending command and domain requests, decisions, sandboxes and the
// audit log of the supervisor's approval server (the guardian's API, "Web UI").
//
// Everything the server sends comes from the agent in the end (argv, domain names, paths), so
// it reaches the page only as text: textContent and createElement, never innerHTML.
import {
	backoffDelay,
	bannerFor,
	cancelNotice,
	clip,
	commandConfirmation,
	commandDecisionBody,
	comparePending,
	countdownText,
	createdMs,
	domainConfirmation,
	domainHost,
	elapsedText,
	fileDecisionBody,
	formatClock,
	hasHidden,
	isTypingTarget,
	itemSummary,
	loginBanner,
	OFFLINE_AFTER,
	parseJson,
	removalNotice,
	runningItem,
	scopeText,
	shortcutTarget,
	verdictClass,
	visible,
	wantsNotification,
	wildcardOf,
} from './util.js';

const MAX_ARG_CHARS = 4000; // per argument shown; the rest is counted, not shown
const MAX_ARGS = 256; // arguments shown as chips; the rest are counted
const MAX_LOG_ENTRIES = 300;
const MAX_RUNNING = 200; // rows in the Running panel; the server's list is short in practice
const MAX_NOTICES = 5;
const NOTICE_MS = 20000;
const STALE_MS = 75000; // no heartbeat for this long: the stream is dead
const STATUS_POLL_MS = 5000;
const SCOPES = ['once', 'session', 'project', 'global'];
// A write is allowed in every scope (its path) but denied for this write only: the server keeps
// no denial of a path (fs.protect in the config is the lasting one) and refuses a wider one.
const FILE_DENY_SCOPES = ['once'];

const $ = (id) => document.getElementById(id);

// ---- DOM helpers -----------------------------------------------------------------------------

// el('div', {class: 'x', 'aria-label': 'y'}, child, 'text', …): attributes with setAttribute,
// children as nodes or text nodes. Attribute values and text are never parsed as HTML.
function el(tag, attrs, ...children) {
	const node = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs || {})) {
		if (v === undefined || v === null || v === false) continue;
		if (k === 'text') node.textContent = String(v);
		else if (k === 'dataset') Object.assign(node.dataset, v);
		else node.setAttribute(k, v === true ? '' : String(v));
	}
	for (const c of children) {
		if (c === undefined || c === null || c === false) continue;
		node.append(c instanceof Node ? c : document.createTextNode(String(c)));
	}
	return node;
}

// Text from the agent: hidden characters written out, flagged when there were any.
function agentText(s, cls) {
	const span = el('span', { class: cls || 'agent-text', dir: 'ltr' }, visible(s));
	if (hasHidden(s)) {
		span.classList.add('has-hidden');
		span.title = 'Contains control or invisible characters, shown as escapes';
	}
	return span;
}

let uid = 0;
const nextId = (prefix) => `${prefix}-${++uid}`;

// ---- state -----------------------------------------------------------------------------------

const state = {
	cards: new Map(), // id -> {item, li, countdown, buttons}
	gone: new Map(), // id -> ms: removed by an event, so a late /pending must not bring it back
	decidedHere: new Set(), // ids this page decided: their removal event needs no notice
	running: new Map(), // id -> {item, li, elapsed, button, busy, seq}: commands running now
	runGone: new Map(), // id -> ms: finished, so a late /running must not bring it back
	selected: null,
	peers: new Map(), // url -> {url, name, es, failures, timer}: the other runs' supervisors
	filter: '',
	sandboxes: [],
	connected: false,
	loggedOut: false, // the server said 401: no session cookie (or a stale one)
	failures: 0,
	es: null,
	reconnectTimer: 0,
	lastMessage: 0,
	log: { es: null, failures: 0, timer: 0, paused: false, held: [] },
};

// ---- connection and banner ------------------------------------------------------------------

function renderConnection() {
	const banner = state.loggedOut ? loginBanner(location.origin) : bannerFor(state.connected, state.failures);
	const box = $('banner');
	$('conn-state').dataset.state = state.connected ? 'online' : banner?.level || 'warning';
	$('conn-text').textContent = state.connected
		? 'Connected'
		: state.loggedOut
		  ? 'Not logged in'
		  : state.failures >= OFFLINE_AFTER
		    ? 'Offline'
		    : 'Reconnecting…';
	document.body.classList.toggle('offline', !state.connected);
	for (const c of state.cards.values()) setCardEnabled(c, cardOnline(c) && !c.busy);
	for (const b of $('sandbox-list').querySelectorAll('.sandbox-tools button'))
		b.disabled = !sourceOnline(b.dataset.origin || '');
	for (const r of state.running.values()) r.button.disabled = !state.connected || r.busy;
	if (!banner) {
		box.hidden = true;
		return;
	}
	box.hidden = false;
	box.dataset.level = banner.level;
	// Only a change is written: the live region would announce the same text again.
	if ($('banner-text').textContent !== banner.text) $('banner-text').textContent = banner.text;
	$('banner-detail').textContent = banner.detail
		? banner.detail
		: state.reconnectAt
		  ? `Next attempt at ${formatClock(state.reconnectAt)}.`
		  : '';
}

// Without a session every request but the page is refused with 401. Stop the streams and the
// polling (they would fail forever) and say how to log in; Retry starts again.
function needLogin() {
	if (state.loggedOut) return;
	state.loggedOut = true;
	state.connected = false;
	if (state.es) state.es.close();
	state.es = null;
	if (state.log.es) state.log.es.close();
	state.log.es = null;
	clearTimeout(state.reconnectTimer);
	clearTimeout(state.log.timer);
	clearTimeout(statusTimer);
	state.reconnectAt = 0;
	$('log-state').textContent = 'Not logged in.';
	renderConnection();
}

// A stream failed. EventSource does not say why, and a 401 looks to it like a dead server:
// ask. True when the page is not logged in.
async function sessionRefused() {
	try {
		const r = await fetch('/status', { cache: 'no-store', headers: { Accept: 'application/json' } });
		if (r.status === 401) {
			needLogin();
			return true;
		}
	} catch {
		// The server is gone: a connection problem, not a session one.
	}
	return false;
}

function connectEvents() {
	clearTimeout(state.reconnectTimer);
	state.reconnectTimer = 0;
	state.reconnectAt = 0;
	if (state.es) state.es.close();
	const es = new EventSource('/events');
	state.es = es;
	const alive = () => {
		state.lastMessage = Date.now();
	};
	es.addEventListener('open', () => {
		if (state.es !== es) return;
		alive();
		const was = state.failures;
		state.connected = true;
		state.failures = 0;
		renderConnection();
		if (was > 0) notify({ level: 'success', text: 'Reconnected to Cloister.' });
		resync();
	});
	es.addEventListener('request-added', (e) => {
		alive();
		const item = parseJson(e.data);
		if (item && typeof item.id === 'string') addItem({ ...item, origin: '' }, true);
	});
	es.addEventListener('request-removed', (e) => {
		alive();
		const ev = parseJson(e.data);
		if (ev && typeof ev.id === 'string') removedEvent(ev);
	});
	es.addEventListener('command-started', (e) => {
		alive();
		const item = runningItem(parseJson(e.data), Date.now());
		if (item) addRunning(item);
	});
	es.addEventListener('command-finished', (e) => {
		alive();
		const ev = parseJson(e.data);
		if (ev && typeof ev.id === 'string') finishedRunning(ev.id);
	});
	es.addEventListener('heartbeat', alive);
	es.addEventListener('error', () => {
		if (state.es !== es) return;
		es.close(); // no retries of its own while we find out why
		sessionRefused().then((refused) => {
			if (!refused && state.es === es) lostConnection();
		});
	});
}

function lostConnection() {
	if (state.es) state.es.close();
	state.es = null;
	state.connected = false;
	state.failures++;
	const delay = backoffDelay(state.failures, Math.random());
	state.reconnectAt = Date.now() + delay;
	clearTimeout(state.reconnectTimer);
	state.reconnectTimer = setTimeout(connectEvents, delay);
	renderConnection();
}

// Retry at once. The banner stays as it is until the attempt succeeds or fails.
function retryNow() {
	if (state.loggedOut) {
		// Maybe logged in since, in another tab: start again as the page does.
		state.loggedOut = false;
		refreshDecisions();
	}
	connectEvents();
	$('banner-detail').textContent = 'Trying again…';
	connectLogs();
}

// Everything the stream may have missed while it was down.
async function resync() {
	const mark = cardSeq; // cards added later came from the stream: newer than these lists
	refreshRunning();
	const [cmds, domains] = await Promise.all([getJson('/pending'), getJson('/pending-domains')]);
	if (!cmds || !domains) return;
	const items = [...(cmds.requests || []), ...(domains.requests || [])].filter(
		(it) => it && typeof it.id === 'string',
	);
	const ids = new Set(items.map((it) => it.id));
	for (const [id, c] of [...state.cards]) if (!c.item.origin && !ids.has(id) && c.seq <= mark) removeCard(id);
	for (const it of items) addItem({ ...it, origin: '' }, false);
	refreshDecisions();
	refreshStatus();
}

// ---- peers: the other runs of this user ------------------------------------------------------
// Every other supervisor of the user that this page's one vouches for (GET /peers: its API file
// and a listener of the user's own on its port). Their asks come as cards here, each naming its
// run, decided on the peer itself. When this page's supervisor ends, the peers' streams go on.

const MAX_PEERS = 32;
const MAX_SANDBOXES_PER_RUN = 64;
const MAX_DECISIONS_PER_RUN = 10;
const PEER_GIVE_UP = 5; // failed connections in a row: the peer is gone

async function refreshPeers() {
	const d = await getJson('/peers');
	if (!d || !Array.isArray(d.peers)) return; // this supervisor is down: keep what works
	const listed = new Set();
	let added = false;
	for (const p of d.peers.slice(0, MAX_PEERS)) {
		if (!p || typeof p.url !== 'string' || !/^http:\/\/127\.0\.0\.1:\d{1,5}$/.test(p.url)) continue;
		listed.add(p.url);
		if (!state.peers.has(p.url)) {
			const peer = { url: p.url, name: String(p.name || ''), es: null, failures: 0, timer: 0, log: null };
			state.peers.set(p.url, peer);
			connectPeer(peer);
			connectPeerLog(peer);
			added = true;
		}
	}
	let dropped = false;
	for (const peer of [...state.peers.values()])
		if (!listed.has(peer.url)) {
			dropPeer(peer);
			dropped = true;
		}
	// A run came or went: its sandboxes and decisions with it.
	if (added || dropped) scheduleRefresh();
}

function dropPeer(peer) {
	clearTimeout(peer.timer);
	if (peer.es) peer.es.close();
	if (peer.log) peer.log.close();
	peer.log = null;
	state.peers.delete(peer.url);
	for (const [id, c] of [...state.cards]) if (c.item.origin === peer.url) removeCard(id);
}

function connectPeer(peer) {
	clearTimeout(peer.timer);
	if (peer.es) peer.es.close();
	const es = new EventSource(`${peer.url}/events`, { withCredentials: true });
	peer.es = es;
	const fromPeer = (item) => ({ ...item, origin: peer.url });
	es.addEventListener('open', () => {
		if (peer.es !== es) return;
		peer.failures = 0;
		for (const c of state.cards.values()) if (c.item.origin === peer.url) setCardEnabled(c, !c.busy);
		resyncPeer(peer);
		if (!peer.log) connectPeerLog(peer); // its log stream failed with it: again
	});
	es.addEventListener('request-added', (e) => {
		const item = parseJson(e.data);
		if (item && typeof item.id === 'string') addItem(fromPeer(item), true);
	});
	es.addEventListener('request-removed', (e) => {
		const ev = parseJson(e.data);
		if (ev && typeof ev.id === 'string') removedEvent(ev);
	});
	es.addEventListener('error', () => {
		if (peer.es !== es) return;
		es.close();
		peer.es = null;
		peer.failures++;
		for (const c of state.cards.values()) if (c.item.origin === peer.url) setCardEnabled(c, false);
		if (peer.failures >= PEER_GIVE_UP) {
			dropPeer(peer);
			return;
		}
		peer.timer = setTimeout(() => connectPeer(peer), backoffDelay(peer.failures, Math.random()));
	});
}

async function resyncPeer(peer) {
	const mark = cardSeq;
	const [cmds, domains] = await Promise.all([
		getJson('/pending', peer.url),
		getJson('/pending-domains', peer.url),
	]);
	if (!cmds || !domains || state.peers.get(peer.url) !== peer) return;
	const items = [...(cmds.requests || []), ...(domains.requests || [])].filter(
		(it) => it && typeof it.id === 'string',
	);
	const ids = new Set(items.map((it) => it.id));
	for (const [id, c] of [...state.cards])
		if (c.item.origin === peer.url && !ids.has(id) && c.seq <= mark) removeCard(id);
	for (const it of items) addItem({ ...it, origin: peer.url }, false);
}

// BASE: '' for this page's supervisor, or a peer's URL (its cookie is the same: every
// supervisor of the user shares the dashboard's secret).
async function getJson(path, base = '') {
	try {
		const r = await fetch(base + path, {
			cache: 'no-store',
			headers: { Accept: 'application/json' },
			credentials: base ? 'include' : 'same-origin',
		});
		if (r.status === 401 && !base) needLogin();
		if (!r.ok) return null;
		return parseJson(await r.text());
	} catch {
		return null;
	}
}

async function postJson(path, body, base = '') {
	try {
		const r = await fetch(base + path, {
			method: 'POST',
			cache: 'no-store',
			headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
			body: JSON.stringify(body),
			credentials: base ? 'include' : 'same-origin',
		});
		if (r.status === 401 && !base) needLogin();
		return { ok: r.ok, status: r.status, data: parseJson(await r.text()) };
	} catch (e) {
		return { ok: false, status: 0, data: { error: 'Cloister did not answer' } };
	}
}

// ---- notices ---------------------------------------------------------------------------------

function notify(n) {
	if (!n) return;
	const box = $('notices');
	const li = el(
		'div',
		{ class: `notice notice-${n.level}` },
		el('p', { class: 'notice-text' }, n.text),
		n.detail ? el('p', { class: 'notice-detail' }, n.detail) : null,
		n.warning ? el('p', { class: 'notice-warning' }, `⚠ ${n.warning}`) : null,
	);
	const close = el('button', {
		type: 'button',
		class: 'notice-close',
		'aria-label': 'Dismiss',
		text: '×',
	});
	close.addEventListener('click', () => li.remove());
	li.append(close);
	box.prepend(li);
	while (box.children.length > MAX_NOTICES) box.lastElementChild.remove();
	// A notice with a warning stays until dismissed.
	if (!n.warning) setTimeout(() => li.remove(), NOTICE_MS);
}

function announce(text) {
	const a = $('announcer');
	a.textContent = '';
	// A new node, so that the same text twice is announced twice.
	setTimeout(() => {
		a.textContent = text;
	}, 50);
}

// ---- pending cards ---------------------------------------------------------------------------

function row(dl, label, value) {
	if (value === undefined || value === null || value === '') return;
	dl.append(el('dt', {}, label), el('dd', {}, value instanceof Node ? value : String(value)));
}

function argList(args) {
	const ol = el('ol', { class: 'argv', 'aria-label': `Arguments (${args.length})` });
	args.slice(0, MAX_ARGS).forEach((a, i) => {
		const s = typeof a === 'string' ? a : String(a);
		const { text, omitted } = clip(s, MAX_ARG_CHARS);
		const chip = el(
			'li',
			{ class: 'arg' },
			el('span', { class: 'arg-index', 'aria-hidden': 'true' }, String(i)),
			s === '' ? el('span', { class: 'arg-empty' }, '(empty)') : agentText(text, 'arg-text'),
			omitted ? el('span', { class: 'arg-more' }, ` … ${omitted} more characters`) : null,
		);
		chip.setAttribute('aria-label', `argument ${i}: ${s === '' ? 'empty' : visible(clip(text, 300).text)}`);
		ol.append(chip);
	});
	if (args.length > MAX_ARGS)
		ol.append(el('li', { class: 'arg arg-more' }, `… ${args.length - MAX_ARGS} more arguments`));
	return ol;
}

function timeValue(item, card) {
	const created = createdMs(item);
	const countdown = el('span', { class: 'countdown' });
	card.countdown = countdown;
	const t = el('span', {}, el('time', { datetime: item.timestamp || '' }, formatClock(created)));
	if (typeof item.expires_ms === 'number') t.append(' (', countdown, ')');
	return t;
}

const CARD_TITLES = { domain: 'Domain request', file: 'File write request', command: 'Command request' };

// A card's look: a domain, a file write (kind "file" among the command-type asks) or a command.
function cardLook(item) {
	if (item.type === 'domain') return 'domain';
	return item.kind === 'file' ? 'file' : 'command';
}

function cardHeader(item, titleId) {
	const isDomain = item.type === 'domain';
	const look = cardLook(item);
	const h = el(
		'h3',
		{ class: 'card-title', id: titleId },
		el('span', { class: `card-icon icon-${look}`, 'aria-hidden': 'true' }),
		CARD_TITLES[look],
	);
	const meta = el('p', { class: 'card-meta' });
	if (!isDomain && item.kind) meta.append(el('span', { class: `kind kind-${item.kind}` }, item.kind));
	meta.append(agentText(item.cloister || '?', 'card-cloister'));
	if (item.waiters > 1) meta.append(el('span', { class: 'waiters' }, `${item.waiters} waiting`));
	return el('div', { class: 'card-head' }, h, meta);
}

function commandBody(item, card) {
	const dl = el('dl', { class: 'facts' });
	row(dl, 'Cloister', agentText(item.cloister || ''));
	if (item.project && item.project !== item.cloister) row(dl, 'Project', agentText(item.project));
	if (item.branch) row(dl, 'Branch', agentText(item.branch));
	if (item.agent) row(dl, 'Agent', agentText(item.agent));
	const cmd = clip(item.cmd || '', MAX_ARG_CHARS);
	const cmdText = agentText(cmd.text, 'cmd');
	row(
		dl,
		'Command',
		cmd.omitted
			? el('span', {}, cmdText, el('span', { class: 'arg-more' }, ` … ${cmd.omitted} more characters`))
			: cmdText,
	);
	if (Array.isArray(item.args) && item.args.length) row(dl, 'Arguments', argList(item.args));
	if (item.exe) row(dl, 'Executable', agentText(item.exe, 'path'));
	if (item.note) row(dl, 'Asked again', String(item.note));
	if (item.interpreter) row(dl, 'Interpreter', agentText(item.interpreter, 'path'));
	if (item.cwd) row(dl, 'Directory', agentText(item.cwd, 'path'));
	if (typeof item.pid === 'number')
		row(dl, 'Process', `pid ${item.pid}${typeof item.uid === 'number' ? `, uid ${item.uid}` : ''}`);
	row(dl, 'Time', timeValue(item, card));

	const actions = el('div', { class: 'actions command-actions' }, reasonRow(card));
	actions.append(coverChoice(item, card));
	card.buttons = [...card.covers, card.pattern];
	const summary = visible(clip(item.cmd || '', 200).text);
	actions.append(
		...scopeGroups(card, {
			words: ['Approve', 'Deny'],
			actions: ['approve', 'deny'],
			label: summary,
			summary,
			decide: (allow, scope) => decideCommand(card, allow, scope),
		}),
	);
	return [dl, actions];
}

// The optional reason a person types for a command or file decision (Escape leaves it).
function reasonRow(card) {
	const reasonId = nextId('reason');
	const reason = el('input', {
		type: 'text',
		id: reasonId,
		class: 'reason',
		maxlength: '500',
		autocomplete: 'off',
		placeholder: 'optional',
	});
	card.reason = reason;
	reason.addEventListener('keydown', (e) => {
		if (e.key === 'Escape') {
			e.preventDefault();
			card.li.focus();
		}
	});
	return el('div', { class: 'reason-row' }, el('label', { class: 'reason-label', for: reasonId }, 'Reason'), reason);
}

// The two button groups every card ends with, the one home of their look and wording: WORDS
// ["Approve", "Deny"] or ["Allow", "Deny"], ACTIONS the data-action of each, one button per
// scope in ALLOWSCOPES / DENYSCOPES (all four unless said), each calling DECIDE(allow, scope).
// LABEL names the groups for a screen reader, SUMMARY (if any) ends each button's label.
function scopeGroups(card, { words, actions, label, summary, allowScopes = SCOPES, denyScopes = SCOPES, decide }) {
	const groups = [];
	for (const allow of [true, false]) {
		const word = allow ? words[0] : words[1];
		const group = el('div', {
			class: `scope-group ${allow ? 'group-allow' : 'group-deny'}`,
			role: 'group',
			'aria-label': `${word} ${label}`,
		});
		group.append(el('span', { class: 'scope-label', 'aria-hidden': 'true' }, word));
		const btns = el('div', { class: 'buttons' });
		for (const scope of allow ? allowScopes : denyScopes) {
			const how = scope === 'once' ? 'once' : `for the ${scope}`;
			const b = el(
				'button',
				{
					type: 'button',
					class: `btn ${allow ? 'btn-approve' : 'btn-deny'} btn-scope`,
					'data-action': allow ? actions[0] : actions[1],
					'data-scope': scope,
					'aria-label': summary ? `${word} ${how}: ${summary}` : `${word} ${how}`,
				},
				scope[0].toUpperCase() + scope.slice(1),
			);
			b.addEventListener('click', () => decide(allow, scope));
			btns.append(b);
			card.buttons.push(b);
		}
		group.append(btns);
		groups.push(group);
	}
	return groups;
}

// A write outside fs.write (fs.ask: on-write): the file, the process that opens it, and the
// scopes a file decision takes — its path, so nothing to choose about what a scope covers.
function fileBody(item, card) {
	const dl = el('dl', { class: 'facts' });
	row(dl, 'Cloister', agentText(item.cloister || ''));
	if (item.project && item.project !== item.cloister) row(dl, 'Project', agentText(item.project));
	if (item.branch) row(dl, 'Branch', agentText(item.branch));
	if (item.agent) row(dl, 'Agent', agentText(item.agent));
	const path = clip(item.cmd || '', MAX_ARG_CHARS);
	row(dl, 'File', agentText(path.text, 'path'));
	processRows(dl, item);
	row(dl, 'Time', timeValue(item, card));

	const actions = el('div', { class: 'actions command-actions' }, reasonRow(card));
	card.buttons = [];
	const summary = visible(clip(item.cmd || '', 200).text);
	actions.append(
		...scopeGroups(card, {
			words: ['Approve', 'Deny'],
			actions: ['approve', 'deny'],
			label: `the write to ${summary}`,
			summary,
			denyScopes: FILE_DENY_SCOPES,
			decide: (allow, scope) => decideCommand(card, allow, scope),
		}),
	);
	return [dl, actions];
}

// What a decision wider than once covers: this exact command, the program with any arguments,
// or a pattern the person edits (prefilled from the server's suggestion). Once covers the one
// ask whatever is chosen here.
function coverChoice(item, card) {
	const name = nextId('cover');
	const program = item.suggested?.program || item.exe || '';
	const fs = el('fieldset', { class: 'cover' }, el('legend', {}, 'A wider scope covers'));
	const radio = (value, label, extra) => {
		const id = nextId('cv');
		const input = el('input', { type: 'radio', name, id, value, checked: value === 'exact' });
		fs.append(el('div', { class: 'cover-row' }, input, el('label', { for: id }, label, extra || '')));
		return input;
	};
	card.covers = [radio('exact', 'this exact command')];
	if (program) card.covers.push(radio('program', 'this program with any arguments: ', agentText(program, 'path')));
	const patId = nextId('pat');
	const pattern = el('input', {
		type: 'text',
		id: patId,
		class: 'pattern-input',
		maxlength: '1000',
		autocomplete: 'off',
		spellcheck: 'false',
		'aria-label': 'Pattern',
	});
	pattern.value = item.suggested?.pattern || item.cmd || '';
	card.pattern = pattern;
	const byPattern = radio('pattern', 'a pattern: ');
	byPattern.parentElement.append(pattern);
	card.covers.push(byPattern);
	// Editing the pattern means the pattern.
	pattern.addEventListener('input', () => {
		byPattern.checked = true;
	});
	pattern.addEventListener('keydown', (e) => {
		if (e.key === 'Escape') {
			e.preventDefault();
			card.li.focus();
		}
	});
	return fs;
}

function coverOf(card) {
	const c = (card.covers || []).find((r) => r.checked);
	return c ? c.value : 'exact';
}

function processRows(dl, item) {
	if (typeof item.pid === 'number')
		row(dl, 'Process', `pid ${item.pid}${typeof item.uid === 'number' ? `, uid ${item.uid}` : ''}`);
	if (item.exe) row(dl, 'Executable', agentText(item.exe, 'path'));
	if (Array.isArray(item.args) && item.args.length) row(dl, 'Arguments', argList(item.args));
	if (item.cwd) row(dl, 'Directory', agentText(item.cwd, 'path'));
}

function domainBody(item, card) {
	const dl = el('dl', { class: 'facts' });
	row(dl, 'Cloister', agentText(item.cloister || ''));
	if (item.project && item.project !== item.cloister) row(dl, 'Project', agentText(item.project));
	row(dl, 'Domain', agentText(item.domain || '', 'domain'));
	// The process that connected: its pid, executable, arguments and directory.
	processRows(dl, item);
	row(dl, 'Time', timeValue(item, card));

	const pattern = wildcardOf(item.domain || '');
	const actions = el('div', { class: 'actions domain-actions' });
	card.wildcard = null;
	if (pattern) {
		const boxId = nextId('wild');
		const box = el('input', { type: 'checkbox', id: boxId, class: 'wildcard' });
		card.wildcard = box;
		actions.append(
			el(
				'div',
				{ class: 'wildcard-row' },
				box,
				el('label', { for: boxId }, 'Apply to wildcard pattern: ', agentText(pattern, 'pattern')),
			),
		);
	}
	card.buttons = card.wildcard ? [card.wildcard] : [];
	actions.append(
		...scopeGroups(card, {
			words: ['Allow', 'Deny'],
			actions: ['allow', 'deny'],
			label: visible(domainHost(item.domain || '')),
			decide: (allow, scope) => decideDomain(card, allow, scope),
		}),
	);
	return [dl, actions];
}

let cardSeq = 0;

function buildCard(item) {
	const card = { item, busy: false, seq: ++cardSeq };
	const titleId = nextId('card');
	const look = cardLook(item);
	const li = el('li', {
		class: `card card-${look}${item.origin ? ' card-peer' : ''}`,
		tabindex: '-1',
		'aria-labelledby': titleId,
		'data-id': item.id,
	});
	card.li = li;
	const body =
		look === 'domain' ? domainBody(item, card) : look === 'file' ? fileBody(item, card) : commandBody(item, card);
	li.append(cardHeader(item, titleId), ...body);
	li.addEventListener('focusin', () => select(item.id, false));
	li.addEventListener('click', () => select(item.id, false));
	return card;
}

// A card is decided on the supervisor it came from: this page's, or a peer's while its stream
// lives (whether this page's supervisor is up or not).
function cardOnline(card) {
	if (!card.item.origin) return state.connected;
	const peer = state.peers.get(card.item.origin);
	return Boolean(peer && peer.failures === 0);
}

function setCardEnabled(card, on) {
	for (const b of card.buttons || []) b.disabled = !on;
	if (card.reason) card.reason.disabled = card.busy;
}

function addItem(item, live) {
	if (state.cards.has(item.id)) return;
	if (state.gone.has(item.id)) return;
	if (item.type !== 'domain') item.type = 'command';
	const card = buildCard(item);
	state.cards.set(item.id, card);
	// Newest first: before the first card that is older.
	const list = $('pending-list');
	let before = null;
	for (const other of list.children) {
		const o = state.cards.get(other.dataset.id);
		if (o && comparePending(item, o.item) < 0) {
			before = other;
			break;
		}
	}
	list.insertBefore(card.li, before);
	setCardEnabled(card, cardOnline(card));
	applyFilterTo(card);
	tick();
	renderPendingMeta();
	noteSandbox(item.cloister);
	if (live && matchesFilter(item)) {
		announce(
			`New ${cardLook(item) === 'file' ? 'file write' : item.type} request from ${visible(item.cloister || '')}: ${visible(itemSummary(item))}`,
		);
		card.li.classList.add('fresh');
		setTimeout(() => card.li.classList.remove('fresh'), 1500);
	}
	if (wantsNotification(live, document.hidden, notificationPermission()))
		systemNotice(item);
}

// ---- system notifications --------------------------------------------------------------------
// A card that arrives while the tab is in the background raises a notification of the browser,
// once the person allowed them: the permission is asked on their click, never on load.

function notificationPermission() {
	return typeof Notification === 'function' ? Notification.permission : 'unsupported';
}

function systemNotice(item) {
	const kind = CARD_TITLES[cardLook(item)];
	try {
		const n = new Notification(`Cloister: ${kind} from ${visible(item.cloister || '?')}`, {
			body: visible(clip(itemSummary(item), 200).text),
			tag: `cloister-${item.id}`,
		});
		n.onclick = () => {
			window.focus();
			select(item.id, true);
			n.close();
		};
	} catch {
		// Some browsers allow notifications only from a service worker: the title still counts.
	}
}

function renderNotifyButton() {
	const b = $('notify-button');
	const p = notificationPermission();
	b.hidden = p === 'unsupported';
	b.disabled = p === 'denied';
	b.textContent = p === 'granted' ? 'Notifications on' : p === 'denied' ? 'Notifications blocked' : 'Notify me';
	b.title =
		p === 'denied'
			? 'The browser blocks notifications for this page: allow them in its site settings.'
			: 'A system notification when a request arrives while this tab is in the background.';
}

async function askNotifications() {
	// Asked on this click only; a browser that was told "granted" elsewhere just says so.
	if (notificationPermission() === 'unsupported' || notificationPermission() === 'denied') return;
	try {
		await Notification.requestPermission();
	} catch {
		// An old browser with the callback form only: nothing to do.
	}
	renderNotifyButton();
}

function removeCard(id) {
	const card = state.cards.get(id);
	if (!card) return null;
	const wasSelected = state.selected === id;
	const vis = visibleCards();
	const idx = vis.indexOf(card);
	const hadFocus = card.li.contains(document.activeElement);
	card.li.remove();
	state.cards.delete(id);
	if (wasSelected) {
		state.selected = null;
		const rest = visibleCards();
		const next = rest[Math.min(idx, rest.length - 1)];
		if (next) select(next.item.id, hadFocus);
		else if (hadFocus) $('pending-heading').focus();
	}
	renderPendingMeta();
	return card;
}

function removedEvent(ev) {
	state.gone.set(ev.id, Date.now());
	const card = removeCard(ev.id);
	if (state.decidedHere.delete(ev.id)) {
		scheduleRefresh();
		return;
	}
	// A decision by someone else (the terminal, the CLI, another tab), a timeout, a cancel.
	if (card || ev.status === 'timed_out') {
		if (!card || matchesFilter(card.item)) notify(removalNotice(ev));
	}
	scheduleRefresh();
}

function renderPendingMeta() {
	const n = visibleCards().length;
	const total = state.cards.size;
	$('pending-count').textContent = state.filter && n !== total ? `${n} of ${total}` : String(total);
	$('pending-empty').hidden = n > 0;
	$('pending-empty').textContent =
		total > 0 ? 'No request from this sandbox is waiting.' : 'No request is waiting for you.';
	document.title = total > 0 ? `(${total}) Cloister` : 'Cloister';
}

function visibleCards() {
	const out = [];
	for (const li of $('pending-list').children) {
		const c = state.cards.get(li.dataset.id);
		if (c && !li.hidden) out.push(c);
	}
	return out;
}

function tick() {
	const now = Date.now();
	for (const c of state.cards.values()) {
		if (!c.countdown) continue;
		const text = countdownText(c.item.expires_ms, now);
		if (c.countdown.textContent !== text) c.countdown.textContent = text;
		c.countdown.classList.toggle('urgent', c.item.expires_ms - now < 30000);
	}
	for (const r of state.running.values()) {
		const text = `running for ${elapsedText(r.item.startedMs, now)}`;
		if (r.elapsed.textContent !== text) r.elapsed.textContent = text;
	}
	// Forget removed ids after a while: ids are not reused within a run.
	for (const [id, t] of state.gone) if (now - t > 10 * 60 * 1000) state.gone.delete(id);
	for (const [id, t] of state.runGone) if (now - t > 10 * 60 * 1000) state.runGone.delete(id);
}

// ---- deciding --------------------------------------------------------------------------------

function failureNotice(card, res) {
	const what = visible(itemSummary(card.item));
	if (res.status === 404 || res.status === 409)
		return {
			level: 'info',
			text: `Already decided: ${what}`,
			detail: res.data?.status ? `It was ${res.data.status}.` : 'It is no longer pending.',
		};
	return {
		level: 'error',
		text: `Could not send the decision for ${what}`,
		detail: visible(res.data?.error || `HTTP ${res.status}`),
	};
}

async function decideCommand(card, allow, scope = 'once') {
	if (card.busy || !cardOnline(card)) return;
	const reason = card.reason ? card.reason.value.trim() : '';
	const id = card.item.id;
	const match = coverOf(card);
	const pattern = card.pattern ? card.pattern.value.trim() : '';
	if (scope !== 'once' && match === 'pattern' && !pattern) {
		notify({ level: 'error', text: 'Write a pattern first, or choose what else the decision covers.' });
		card.pattern?.focus();
		return;
	}
	card.busy = true;
	setCardEnabled(card, false);
	card.li.setAttribute('aria-busy', 'true');
	state.decidedHere.add(id);
	const body = card.item.kind === 'file' ? fileDecisionBody(scope, reason) : commandDecisionBody(scope, match, pattern, reason);
	const res = await postJson(`/${allow ? 'approve' : 'deny'}/${encodeURIComponent(id)}`, body, card.item.origin || '');
	card.busy = false;
	card.li.removeAttribute('aria-busy');
	if (res.ok) {
		notify(commandConfirmation(allow, card.item, reason, res.data));
		state.gone.set(id, Date.now());
		removeCard(id);
		scheduleRefresh();
		return;
	}
	state.decidedHere.delete(id);
	notify(failureNotice(card, res));
	if (res.status === 404 || res.status === 409) {
		state.gone.set(id, Date.now());
		removeCard(id);
	} else {
		setCardEnabled(card, cardOnline(card));
	}
}

async function decideDomain(card, allow, scope) {
	if (card.busy || !cardOnline(card)) return;
	const id = card.item.id;
	const wildcard = Boolean(card.wildcard && card.wildcard.checked);
	card.busy = true;
	setCardEnabled(card, false);
	card.li.setAttribute('aria-busy', 'true');
	state.decidedHere.add(id);
	const res = await postJson(
		`/${allow ? 'approve' : 'deny'}-domain/${encodeURIComponent(id)}`,
		{ scope, wildcard },
		card.item.origin || '',
	);
	card.busy = false;
	card.li.removeAttribute('aria-busy');
	if (res.ok) {
		notify(domainConfirmation(allow, card.item, res.data || { scope }));
		state.gone.set(id, Date.now());
		removeCard(id);
		scheduleRefresh();
		return;
	}
	state.decidedHere.delete(id);
	notify(failureNotice(card, res));
	if (res.status === 404 || res.status === 409) {
		state.gone.set(id, Date.now());
		removeCard(id);
	} else {
		setCardEnabled(card, cardOnline(card));
	}
}

// ---- selection and keyboard ------------------------------------------------------------------

function select(id, focus) {
	if (state.selected && state.selected !== id) {
		const old = state.cards.get(state.selected);
		if (old) {
			old.li.classList.remove('selected');
			old.li.removeAttribute('aria-current');
		}
	}
	const card = state.cards.get(id);
	if (!card) {
		state.selected = null;
		return;
	}
	state.selected = id;
	card.li.classList.add('selected');
	card.li.setAttribute('aria-current', 'true');
	if (focus) {
		card.li.focus({ preventScroll: true });
		card.li.scrollIntoView({ block: 'nearest' });
	}
}

function move(delta) {
	const cards = visibleCards();
	if (!cards.length) return;
	let i = cards.findIndex((c) => c.item.id === state.selected);
	if (i < 0) i = delta > 0 ? 0 : cards.length - 1;
	else i = Math.max(0, Math.min(cards.length - 1, i + delta));
	select(cards[i].item.id, true);
}

function selectedCard() {
	const c = state.selected ? state.cards.get(state.selected) : null;
	return c && !c.li.hidden ? c : null;
}

function onKey(e) {
	if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
	if (isTypingTarget(e.target)) return;
	if (document.querySelector('dialog[open]')) return;
	const card = shortcutTarget(selectedCard(), visibleCards());
	switch (e.key) {
		case 'j':
			move(1);
			break;
		case 'k':
			move(-1);
			break;
		case 'a':
		case 'd':
			if (!card) {
				notify({ level: 'info', text: 'Select a request first (j / k).' });
				break;
			}
			if (card.item.type === 'domain') decideDomain(card, e.key === 'a', 'once');
			else decideCommand(card, e.key === 'a');
			break;
		case 'r':
			if (card?.reason) card.reason.focus();
			else return;
			break;
		case '?':
			openDialog($('help-dialog'), $('help-close'));
			break;
		default:
			return;
	}
	e.preventDefault();
}

// ---- dialogs ---------------------------------------------------------------------------------

let dialogReturn = null;

function openDialog(dialog, focus) {
	dialogReturn = document.activeElement;
	dialog.showModal();
	focus?.focus();
}

function closeDialog(dialog) {
	if (dialog.open) dialog.close();
}

function setupDialogs() {
	for (const d of document.querySelectorAll('dialog')) {
		d.addEventListener('close', () => {
			if (dialogReturn && document.contains(dialogReturn)) dialogReturn.focus();
			dialogReturn = null;
		});
	}
	$('help-button').addEventListener('click', () => openDialog($('help-dialog'), $('help-close')));
	$('help-close').addEventListener('click', () => closeDialog($('help-dialog')));
	$('kill-cancel').addEventListener('click', () => closeDialog($('kill-dialog')));
	$('kill-confirm').addEventListener('click', () => {
		const name = $('kill-dialog').dataset.name;
		const origin = $('kill-dialog').dataset.origin || '';
		closeDialog($('kill-dialog'));
		if (name) sandboxAction(name, 'kill', origin);
	});
}

// ---- sandboxes and the filter ----------------------------------------------------------------

function matchesFilter(item) {
	return !state.filter || item.cloister === state.filter;
}

function applyFilterTo(card) {
	card.li.hidden = !matchesFilter(card.item);
}

function applyFilter() {
	for (const c of state.cards.values()) applyFilterTo(c);
	if (state.selected && !selectedCard()) select(null, false);
	renderPendingMeta();
	for (const r of state.running.values()) r.li.hidden = !matchesFilter(r.item);
	renderRunningMeta();
	renderDecisions();
	$('log-scope').textContent = state.filter ? visible(state.filter) : 'all sandboxes';
	connectLogs();
	for (const li of $('sandbox-list').children)
		li.classList.toggle('current', li.dataset.name === state.filter);
}

const knownNames = new Set();

function noteSandbox(name) {
	if (!name || knownNames.has(name)) return;
	knownNames.add(name);
	const sel = $('sandbox-filter');
	const names = [...knownNames].sort();
	const opt = el('option', { value: name }, visible(name));
	const after = names.indexOf(name);
	sel.insertBefore(opt, sel.options[after + 1] || null);
}

let statusTimer = 0;

// This run's sandboxes and every peer's, each peer's naming its run (origin: where its
// buttons send). A source that does not answer keeps what it showed last.
async function refreshStatus() {
	clearTimeout(statusTimer);
	const peers = [...state.peers.values()];
	const [own, ...others] = await Promise.all([
		getJson('/status'),
		...peers.map((p) => getJson('/status', p.url)),
	]);
	const sources = [{ d: own, origin: '', run: '' }, ...peers.map((p, i) => ({ d: others[i], origin: p.url, run: p.name }))];
	if (sources.some((x) => x.d && Array.isArray(x.d.sandboxes))) {
		const list = [];
		for (const { d, origin, run } of sources) {
			if (d && Array.isArray(d.sandboxes))
				for (const sb of d.sandboxes.slice(0, MAX_SANDBOXES_PER_RUN)) list.push({ ...sb, origin, run });
			else list.push(...state.sandboxes.filter((sb) => sb.origin === origin));
		}
		renderSandboxes(list);
	}
	refreshPeers();
	clearTimeout(statusTimer);
	if (state.loggedOut) return;
	statusTimer = setTimeout(refreshStatus, STATUS_POLL_MS);
}

let refreshTimer = 0;

// After a decision: the decisions list and the sandboxes' pending counts, once per burst.
function scheduleRefresh() {
	clearTimeout(refreshTimer);
	refreshTimer = setTimeout(() => {
		refreshDecisions();
		refreshStatus();
	}, 150);
}

let sandboxesKey = '';

function renderSandboxes(list) {
	const key = JSON.stringify(list);
	if (key === sandboxesKey) return; // unchanged: keep the nodes, and the focus in them
	sandboxesKey = key;
	state.sandboxes = list.filter((s) => s && typeof s.name === 'string');
	const ul = $('sandbox-list');
	const focused = ul.contains(document.activeElement) ? document.activeElement.dataset.key : null;
	ul.replaceChildren();
	$('sandboxes-empty').hidden = state.sandboxes.length > 0;
	for (const s of state.sandboxes) {
		noteSandbox(s.name);
		const stateName = ['running', 'paused', 'stopped'].includes(s.state) ? s.state : 'unknown';
		const headId = nextId('sb');
		const origin = typeof s.origin === 'string' ? s.origin : '';
		const li = el('li', {
			class: `sandbox${s.name === state.filter ? ' current' : ''}${origin ? ' sandbox-peer' : ''}`,
			'data-name': s.name,
			'aria-labelledby': headId,
		});
		const view = el(
			'button',
			{ type: 'button', class: 'link sandbox-name', id: headId, 'aria-pressed': String(s.name === state.filter) },
			agentText(s.name),
		);
		view.title = 'Show only this sandbox';
		view.addEventListener('click', () => setFilter(s.name === state.filter ? '' : s.name));
		const facts = el('p', { class: 'sandbox-facts' });
		facts.append(el('span', { class: `state state-${stateName}` }, stateName));
		if (origin) facts.append(' · ', el('span', { class: 'run-name' }, `run ${visible(s.run || origin)}`));
		if (s.project && s.project !== s.name) facts.append(' · project ', agentText(s.project));
		if (typeof s.pid === 'number') facts.append(` · pid ${s.pid}`);
		if (typeof s.pending === 'number') facts.append(` · ${s.pending} pending`);
		const started = Date.parse(s.started);
		if (Number.isFinite(started) && started > 0) facts.append(` · since ${formatClock(started)}`);
		const tools = el('div', { class: 'buttons sandbox-tools' });
		const label = visible(s.name);
		if (stateName === 'running')
			tools.append(actionButton('Pause', `Pause ${label}`, origin, () => sandboxAction(s.name, 'pause', origin)));
		if (stateName === 'paused')
			tools.append(actionButton('Resume', `Resume ${label}`, origin, () => sandboxAction(s.name, 'resume', origin)));
		if (stateName !== 'stopped') {
			const kill = actionButton('Kill…', `Kill ${label}`, origin, () => {
				$('kill-text').textContent =
					`Every process of sandbox “${label}” will be killed, the agent included. This cannot be undone.`;
				$('kill-dialog').dataset.name = s.name;
				$('kill-dialog').dataset.origin = origin;
				openDialog($('kill-dialog'), $('kill-cancel'));
			});
			kill.classList.add('btn-deny-quiet');
			kill.setAttribute('aria-haspopup', 'dialog');
			tools.append(kill);
		}
		li.append(el('div', { class: 'sandbox-head' }, view, tools), facts);
		ul.append(li);
		view.dataset.key = `${s.name}\0view\0${origin}`;
		for (const b of tools.children) b.dataset.key = `${s.name}\0${b.textContent}\0${origin}`;
	}
	if (focused) {
		const buttons = [...ul.querySelectorAll('button')];
		const name = focused.split('\0')[0];
		const again =
			buttons.find((b) => b.dataset.key === focused) ||
			buttons.find((b) => b.dataset.key.split('\0')[0] === name && b.closest('.sandbox-tools'));
		(again || $('sandboxes-heading')).focus();
	}
}

// ORIGIN: the supervisor the button acts on ('' this page's, or a peer's URL).
function sourceOnline(origin) {
	if (!origin) return state.connected;
	const peer = state.peers.get(origin);
	return Boolean(peer && peer.failures === 0);
}

function actionButton(text, label, origin, fn) {
	const b = el('button', { type: 'button', class: 'btn btn-quiet', 'aria-label': label }, text);
	b.dataset.origin = origin;
	b.disabled = !sourceOnline(origin);
	b.addEventListener('click', fn);
	return b;
}

async function sandboxAction(name, action, origin = '') {
	const res = await postJson(`/sandboxes/${encodeURIComponent(name)}/${action}`, {}, origin);
	const label = visible(name);
	if (res.ok) {
		const past = { pause: 'Paused', resume: 'Resumed', kill: 'Killed' }[action];
		// A killed run's supervisor ends with it: no later /status would say it stopped.
		if (action === 'kill')
			renderSandboxes(
				state.sandboxes.map((s) => (s.name === name && (s.origin || '') === origin ? { ...s, state: 'stopped' } : s)),
			);
		notify({ level: action === 'kill' ? 'denied' : 'success', text: `${past} sandbox ${label}` });
	} else {
		notify({
			level: 'error',
			text: `Could not ${action} sandbox ${label}`,
			detail: visible(res.data?.error || `HTTP ${res.status}`),
		});
	}
	refreshStatus();
}

function setFilter(name) {
	state.filter = name;
	$('sandbox-filter').value = name;
	applyFilter();
}

// ---- running commands ------------------------------------------------------------------------
// Approved host commands and shim calls that run now (GET /running, command-started and
// command-finished on /events), each with a Cancel button (POST /cancel/{id}).

let runSeq = 0;

async function refreshRunning() {
	const mark = runSeq; // rows added later came from the stream: newer than this list
	const data = await getJson('/running');
	if (!data || !Array.isArray(data.running)) return;
	const now = Date.now();
	const items = data.running.map((r) => runningItem(r, now)).filter(Boolean);
	const ids = new Set(items.map((it) => it.id));
	for (const [id, r] of [...state.running]) if (!ids.has(id) && r.seq <= mark) removeRunning(id);
	for (const it of items) addRunning(it);
}

function addRunning(item) {
	if (state.runGone.has(item.id)) return;
	const known = state.running.get(item.id);
	if (known) {
		// /running knows when it started; an event only when the page heard of it.
		if (item.started && !known.item.started) {
			known.item = { ...known.item, ...item };
			known.since.dateTime = item.started;
			known.since.textContent = formatClock(item.startedMs);
		}
		return;
	}
	if (state.running.size >= MAX_RUNNING) return;
	const r = { item, busy: false, seq: ++runSeq };
	const cmdText = clip(item.cmd || item.id, 500);
	const label = visible(clip(item.cmd || item.id, 200).text);
	const headId = nextId('run');
	r.elapsed = el('span', { class: 'run-elapsed' });
	const meta = el('p', { class: 'run-meta' });
	meta.append(agentText(item.cloister || '?', 'run-cloister'));
	r.since = el('time', { datetime: item.started || undefined }, formatClock(item.startedMs));
	meta.append(' · since ', r.since, ' · ', r.elapsed);
	r.button = el(
		'button',
		{ type: 'button', class: 'btn btn-quiet btn-deny-quiet run-cancel', 'aria-label': `Cancel ${label}` },
		'Cancel',
	);
	r.button.disabled = !state.connected;
	r.button.addEventListener('click', () => cancelRunning(r));
	const head = el(
		'p',
		{ class: 'run-head', id: headId },
		el('span', { class: `kind kind-${item.kind}` }, item.kind),
		' ',
		agentText(cmdText.text, 'cmd'),
		cmdText.omitted ? el('span', { class: 'arg-more' }, ` … ${cmdText.omitted} more characters`) : null,
	);
	r.li = el(
		'li',
		{ class: 'run', 'data-id': item.id, 'aria-labelledby': headId },
		el('div', { class: 'run-main' }, head, meta),
		r.button,
	);
	r.li.hidden = !matchesFilter(item);
	state.running.set(item.id, r);
	// Oldest first, as they started: a new command goes to the end.
	const list = $('running-list');
	let before = null;
	for (const other of list.children) {
		const o = state.running.get(other.dataset.id);
		if (o && o.item.startedMs > item.startedMs) {
			before = other;
			break;
		}
	}
	list.insertBefore(r.li, before);
	tick();
	renderRunningMeta();
}

function removeRunning(id) {
	const r = state.running.get(id);
	if (!r) return;
	const active = document.activeElement;
	// A button that was disabled while its cancel was on its way may have lost the focus.
	const hadFocus = r.li.contains(active) || (r.focused && (!active || active === document.body));
	const rows = visibleRunning();
	const idx = rows.indexOf(r);
	r.li.remove();
	state.running.delete(id);
	if (hadFocus) {
		// Keep the keyboard user where they were: the next row's button, else the heading.
		const rest = visibleRunning();
		const next = rest[Math.min(idx, rest.length - 1)];
		if (next && !next.button.disabled) next.button.focus();
		else $('running-heading').focus();
	}
	renderRunningMeta();
}

function finishedRunning(id) {
	state.runGone.set(id, Date.now());
	removeRunning(id);
}

function visibleRunning() {
	const out = [];
	for (const li of $('running-list').children) {
		const r = state.running.get(li.dataset.id);
		if (r && !li.hidden) out.push(r);
	}
	return out;
}

function renderRunningMeta() {
	const n = visibleRunning().length;
	const total = state.running.size;
	$('running-count').textContent = state.filter && n !== total ? `${n} of ${total}` : String(total);
	$('running-empty').hidden = n > 0;
	$('running-empty').textContent =
		total > 0 ? 'No command of this sandbox is running.' : 'No approved command is running.';
}

async function cancelRunning(r) {
	if (r.busy || !state.connected) return;
	const id = r.item.id;
	r.busy = true;
	r.focused = r.li.contains(document.activeElement);
	r.button.disabled = true;
	r.li.setAttribute('aria-busy', 'true');
	const res = await postJson(`/cancel/${encodeURIComponent(id)}`, {});
	r.busy = false;
	r.li.removeAttribute('aria-busy');
	notify(cancelNotice(r.item, res));
	// Done (its command-finished event may have come first) or no longer running: the row goes.
	if (res.ok || res.status === 404) {
		finishedRunning(id);
		return;
	}
	r.button.disabled = !state.connected;
	if (r.focused && !r.button.disabled && document.activeElement === document.body) r.button.focus();
	r.focused = false;
}

// ---- decisions -------------------------------------------------------------------------------

let decisions = [];

// This run's recent decisions and every peer's, newest first, each peer's naming its run. A
// source that does not answer keeps what it showed last.
async function refreshDecisions() {
	const peers = [...state.peers.values()];
	const [own, ...others] = await Promise.all([
		getJson('/decisions'),
		...peers.map((p) => getJson('/decisions', p.url)),
	]);
	const sources = [{ d: own, origin: '', run: '' }, ...peers.map((p, i) => ({ d: others[i], origin: p.url, run: p.name }))];
	if (!sources.some((x) => x.d && Array.isArray(x.d.decisions))) return;
	const all = [];
	for (const { d, origin, run } of sources) {
		if (d && Array.isArray(d.decisions))
			all.push(
				...d.decisions
					.filter((x) => x && typeof x.id === 'string')
					.slice(0, MAX_DECISIONS_PER_RUN)
					.map((x) => ({ ...x, origin, run })),
			);
		else all.push(...decisions.filter((x) => x.origin === origin));
	}
	const at = (x) => {
		const t = Date.parse(x.decided_at);
		return Number.isFinite(t) ? t : 0;
	};
	decisions = all.sort((a, b) => at(b) - at(a)); // stable: a run's own order stays
	renderDecisions();
}

const STATUS_TEXT = {
	approved: ['✓', 'Approved'],
	denied: ['✗', 'Denied'],
	timed_out: ['⏱', 'Timed out'],
	cancelled: ['–', 'Cancelled'],
};

function renderDecisions() {
	const ol = $('decision-list');
	ol.replaceChildren();
	const shown = decisions.filter(matchesFilter);
	$('decision-list').hidden = shown.length === 0;
	$('decisions-empty').hidden = shown.length > 0;
	for (const d of shown) {
		const [icon, word] = STATUS_TEXT[d.status] || ['•', String(d.status || '?')];
		const isDomain = d.type === 'domain';
		const head = el(
			'p',
			{ class: 'decision-head' },
			el('span', { class: `decision-status st-${verdictClass(d.status)}` },
				el('span', { 'aria-hidden': 'true' }, `${icon} `), word),
			' ',
			agentText(itemSummary(d), isDomain ? 'domain' : 'cmd'),
		);
		const bits = [];
		bits.push(isDomain ? 'domain' : d.kind || 'command');
		if (d.cloister) bits.push(visible(d.cloister));
		if (d.origin) bits.push(`run ${visible(d.run || d.origin)}`);
		if (d.decided_by) bits.push(`by ${visible(d.decided_by)}`);
		if (d.scope && d.status !== 'timed_out' && d.status !== 'cancelled') bits.push(scopeText(d.scope));
		const at = Date.parse(d.decided_at);
		const meta = el('p', { class: 'decision-meta' }, bits.join(' · '));
		if (Number.isFinite(at)) meta.append(' · ', el('time', { datetime: d.decided_at }, formatClock(at)));
		const li = el('li', { class: 'decision' }, head, meta);
		if (d.reason) li.append(el('p', { class: 'decision-reason' }, 'Reason: ', agentText(d.reason)));
		ol.append(li);
	}
}

// ---- audit log -------------------------------------------------------------------------------

// A peer's audit log, beside this run's: its entries name the run.
function connectPeerLog(peer) {
	if (peer.log) peer.log.close();
	peer.log = null;
	if (state.peers.get(peer.url) !== peer) return;
	const q = state.filter ? `?cloister=${encodeURIComponent(state.filter)}` : '';
	const es = new EventSource(`${peer.url}/logs${q}`, { withCredentials: true });
	peer.log = es;
	es.addEventListener('log', (e) => {
		if (peer.log !== es) return;
		const entry = parseJson(e.data) || e.data;
		const item = { entry, run: peer.name || peer.url };
		if (state.log.paused) {
			state.log.held.push(item);
			if (state.log.held.length > MAX_LOG_ENTRIES) state.log.held.shift();
			$('log-state').textContent = `Paused, ${state.log.held.length} new.`;
			return;
		}
		addLogEntry(entry, item.run);
	});
	// A failed log stream does not retry on its own: the peer's event stream, once it is
	// open again, reconnects it (connectPeer), as does connectLogs (a filter change, Retry).
	es.addEventListener('error', () => {
		if (peer.log !== es) return;
		es.close();
		peer.log = null;
	});
}

function connectLogs() {
	const log = state.log;
	for (const peer of state.peers.values()) connectPeerLog(peer);
	clearTimeout(log.timer);
	if (log.es) log.es.close();
	$('log-list').replaceChildren(); // the server sends its backlog again
	log.held = [];
	const url = state.filter ? `/logs?cloister=${encodeURIComponent(state.filter)}` : '/logs';
	const es = new EventSource(url);
	log.es = es;
	$('log-state').textContent = 'Connecting…';
	es.addEventListener('open', () => {
		if (log.es !== es) return;
		log.failures = 0;
		$('log-state').textContent = log.paused ? 'Paused.' : 'Live.';
	});
	es.addEventListener('log', (e) => {
		if (log.es !== es) return;
		const entry = parseJson(e.data);
		if (log.paused) {
			log.held.push(entry || e.data);
			if (log.held.length > MAX_LOG_ENTRIES) log.held.shift();
			$('log-state').textContent = `Paused, ${log.held.length} new.`;
			return;
		}
		addLogEntry(entry || e.data);
	});
	es.addEventListener('error', () => {
		if (log.es !== es) return;
		es.close();
		log.es = null;
		sessionRefused().then((refused) => {
			if (refused || log.es) return;
			log.failures++;
			$('log-state').textContent = 'Disconnected; reconnecting…';
			clearTimeout(log.timer);
			log.timer = setTimeout(connectLogs, backoffDelay(log.failures, Math.random()));
		});
	});
}

function logTime(entry) {
	const t = Date.parse(entry.time);
	return Number.isFinite(t) ? formatClock(t) : '';
}

// RUN: the peer's run the entry comes from ('' this page's). Newest first, by the entry's time:
// several runs' streams interleave.
function addLogEntry(entry, run = '') {
	const list = $('log-list');
	let li;
	if (typeof entry === 'string') {
		li = el('li', { class: 'log-entry' }, agentText(clip(entry, 500).text, 'log-raw'));
	} else {
		const verdict = typeof entry.verdict === 'string' ? entry.verdict : '';
		const summary =
			entry.summary ||
			(Array.isArray(entry.argv) ? entry.argv.join(' ') : '') ||
			entry.exe ||
			entry.domain ||
			'';
		li = el(
			'li',
			{ class: 'log-entry' },
			el('span', { class: 'log-time' }, logTime(entry)),
			el('span', { class: `log-verdict st-${verdictClass(verdict)}` }, verdict || '?'),
			entry.sandbox ? agentText(String(entry.sandbox), 'log-sandbox') : null,
			run ? el('span', { class: 'run-name' }, `run ${visible(run)}`) : null,
			agentText(clip(String(summary), 500).text, 'log-summary'),
		);
		const extra = [];
		if (entry.rule) extra.push(visible(String(entry.rule)));
		if (entry.decided_by) extra.push(`by ${visible(String(entry.decided_by))}`);
		if (entry.reason) extra.push(visible(String(entry.reason)));
		if (typeof entry.latency_ms === 'number' && entry.latency_ms > 0) extra.push(`${entry.latency_ms} ms`);
		if (extra.length) li.append(el('span', { class: 'log-extra' }, extra.join(' · ')));
	}
	const t = typeof entry === 'object' && entry ? Date.parse(entry.time) : NaN;
	li.dataset.t = String(Number.isFinite(t) ? t : Date.now());
	let before = list.firstElementChild;
	while (before && Number(before.dataset.t) > Number(li.dataset.t)) before = before.nextElementSibling;
	list.insertBefore(li, before);
	while (list.children.length > MAX_LOG_ENTRIES) list.lastElementChild.remove();
}

function setupLog() {
	const pause = $('log-pause');
	pause.addEventListener('click', () => {
		const log = state.log;
		log.paused = !log.paused;
		pause.setAttribute('aria-pressed', String(log.paused));
		pause.textContent = log.paused ? 'Resume' : 'Pause';
		if (!log.paused) {
			for (const e of log.held) {
				if (e && typeof e === 'object' && 'run' in e && 'entry' in e) addLogEntry(e.entry, e.run);
				else addLogEntry(e);
			}
			log.held = [];
		}
		$('log-state').textContent = log.paused ? 'Paused.' : log.es ? 'Live.' : 'Connecting…';
	});
	$('log-clear').addEventListener('click', () => {
		$('log-list').replaceChildren();
		state.log.held = [];
	});
}

// ---- start -----------------------------------------------------------------------------------

function start() {
	setupDialogs();
	setupLog();
	$('retry-button').addEventListener('click', retryNow);
	$('notify-button').addEventListener('click', askNotifications);
	renderNotifyButton();
	$('sandbox-filter').addEventListener('change', (e) => setFilter(e.target.value));
	document.addEventListener('keydown', onKey);
	setInterval(() => {
		tick();
		if (state.connected && Date.now() - state.lastMessage > STALE_MS) lostConnection();
	}, 1000);
	renderConnection();
	connectEvents();
	connectLogs();
	refreshDecisions();
}

start();
