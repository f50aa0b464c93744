/* ptyanswer [--ctty] [--pending FILE] ANSWERS -- COMMAND [ARGS…]: run COMMAND with a
 * pseudo-terminal it can prompt on, and answer its prompts like a person at that terminal
 * would.
 *
 * With --ctty the terminal is COMMAND's controlling terminal and its stdin/stdout/stderr, as
 * when a person runs it in a terminal window (the agent's output then goes through it too).
 * Every "@TTY@" argument is replaced by the terminal's path (for `run --ask-tty @TTY@`).
 * ANSWERS is a comma-separated list of keys ("a", "d,a", "A"); each one is typed, without a
 * newline (the prompts take single keys), when the next approval prompt ("… > ") appears.
 * "-" types nothing (lets the ask time out). What appeared on the terminal is copied to
 * stderr. With --pending, once COMMAND has exited, what is left in the terminal's input (what
 * the shell that ran COMMAND would read next) is written to FILE. Exits with COMMAND's status,
 * or 125 if it could not run it, and 124 if prompts outnumber the answers. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define PROMPT_MARK "[?] details > "

int main(int argc, char **argv)
{
	char seen[65536];
	size_t n_seen = 0, scanned = 0;
	char *answers, *next;
	int master, slave, status, extra = 0;
	char name[256];
	pid_t pid;
	int ctty = 0;
	const char *pending = NULL;

	for (;;) {
		if (argc > 1 && strcmp(argv[1], "--ctty") == 0) {
			ctty = 1;
			argv++;
			argc--;
		} else if (argc > 2 && strcmp(argv[1], "--pending") == 0) {
			pending = argv[2];
			argv += 2;
			argc -= 2;
		} else {
			break;
		}
	}
	if (argc < 4 || strcmp(argv[2], "--") != 0) {
		fprintf(stderr, "usage: ptyanswer [--ctty] [--pending FILE] ANSWERS -- COMMAND "
		                "[ARGS...]\n");
		return 125;
	}
	answers = argv[1];
	if (openpty(&master, &slave, name, NULL, NULL) < 0) {
		perror("ptyanswer: openpty");
		return 125;
	}
	for (int i = 3; i < argc; i++)
		if (strcmp(argv[i], "@TTY@") == 0)
			argv[i] = name;
	pid = fork();
	if (pid < 0)
		return 125;
	if (pid == 0) {
		close(master);
		if (ctty) {
			if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0 || dup2(slave, 0) < 0 ||
			    dup2(slave, 1) < 0 || dup2(slave, 2) < 0) {
				perror("ptyanswer: controlling terminal");
				_exit(125);
			}
		}
		close(slave);
		execvp(argv[3], argv + 3);
		perror("ptyanswer: exec");
		_exit(125);
	}
	/* Keep our slave fd open so the terminal never hangs up under the command. */
	next = answers;
	for (;;) {
		struct pollfd p = {.fd = master, .events = POLLIN};
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (poll(&p, 1, 100) > 0 && (p.revents & POLLIN)) {
			ssize_t got = read(master, seen + n_seen, sizeof(seen) - 1 - n_seen);

			if (got > 0) {
				fwrite(seen + n_seen, 1, (size_t)got, stderr);
				n_seen += (size_t)got;
				seen[n_seen] = '\0';
			}
		}
		while (scanned < n_seen) {
			char *mark = strstr(seen + scanned, PROMPT_MARK);
			char *comma;

			if (!mark)
				break;
			scanned = (size_t)(mark - seen) + strlen(PROMPT_MARK);
			if (!next) {
				extra++;
				continue;
			}
			comma = strchr(next, ',');
			if (comma)
				*comma = '\0';
			if (strcmp(next, "-") != 0 && write(master, next, strlen(next)) < 0)
				perror("ptyanswer: write");
			next = comma ? comma + 1 : NULL;
		}
		if (n_seen > sizeof(seen) - 1024) { /* keep the tail; prompts are short */
			memmove(seen, seen + n_seen - 512, 512);
			n_seen = 512;
			scanned = scanned > n_seen ? n_seen : 0;
			seen[n_seen] = '\0';
		}
	}
	if (pending) {
		/* Non-canonical, so that a pushed command without its newline counts too. */
		struct termios t;
		FILE *f = fopen(pending, "we");
		char buf[4096];
		ssize_t n;

		if (!f || tcgetattr(slave, &t) < 0)
			return 125;
		t.c_lflag &= ~(tcflag_t)ICANON;
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		if (tcsetattr(slave, TCSANOW, &t) < 0)
			return 125;
		while ((n = read(slave, buf, sizeof(buf))) > 0)
			fwrite(buf, 1, (size_t)n, f);
		fclose(f);
	}
	if (extra)
		return 124;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}
