/*
 * Helpers for the manager tests: a private sshd (its own host key, user
 * key and authorized_keys in a scratch directory, on a port of its own,
 * optionally inside a network namespace), and the ssh client settings
 * that reach it.
 */
#ifndef DW_MANAGER_UTIL_H
#define DW_MANAGER_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SSHD_PATH "/usr/sbin/sshd"

struct sshd {
	pid_t pid;
	int port;
	char addr[64];     /* where it listens */
	char dir[600];     /* keys, configs, logs */
	char ssh_cmd[700]; /* "ssh -F DIR/ssh_config" */
	char why[600];     /* why it could not start */
};

static inline double
mu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs a shell command quietly; returns its exit status (or -1). */
static int mu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int
mu_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline int
mu_free_port(const char *addr)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t sl = sizeof a;
	inet_pton(AF_INET, addr, &a.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	getsockname(fd, (struct sockaddr *)&a, &sl);
	close(fd);
	return ntohs(a.sin_port);
}

/* Keys and configs in a fresh directory; shared by every sshd of a
 * test (one user key reaches them all). */
static inline int
mu_ssh_keys(struct sshd *s, const char *dir)
{
	snprintf(s->dir, sizeof s->dir, "%s", dir);
	if (access(SSHD_PATH, X_OK) != 0) {
		snprintf(s->why, sizeof s->why,
		         "%s is not installed "
		         "(apt-get install openssh-server)",
		         SSHD_PATH);
		return -1;
	}
	if (geteuid() != 0) {
		snprintf(s->why, sizeof s->why,
		         "sshd needs root to log users in; running as uid %d",
		         (int)geteuid());
		return -1;
	}
	if (mu_sh("cd '%s' && ssh-keygen -q -t ed25519 -N '' -f host_key && "
	          "ssh-keygen -q -t ed25519 -N '' -f user_key && "
	          "cp user_key.pub authorized_keys && "
	          "chmod 600 authorized_keys",
	          dir) != 0) {
		snprintf(s->why, sizeof s->why, "ssh-keygen failed");
		return -1;
	}
	char path[700];
	snprintf(path, sizeof path, "%s/ssh_config", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f,
	        "Host *\n  IdentityFile %s/user_key\n  IdentitiesOnly yes\n"
	        "  StrictHostKeyChecking no\n"
	        "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
	        "  ConnectTimeout 5\n",
	        dir);
	fclose(f);
	snprintf(s->ssh_cmd, sizeof s->ssh_cmd, "ssh -F %s/ssh_config", dir);
	mkdir("/run/sshd", 0755); /* its privilege separation directory */
	return 0;
}

/* Starts sshd on addr:port (port 0: a free one), through the command
 * prefix `wrap` (e.g. "ip netns exec NS") when not NULL; waits until it
 * listens.  Returns 0, or -1 with s->why. */
static inline int
mu_sshd_start(struct sshd *s, const char *addr, int port, const char *wrap)
{
	snprintf(s->addr, sizeof s->addr, "%s", addr);
	s->port = port ? port : mu_free_port(addr);
	char cfg[700], log[700], pidf[700];
	snprintf(cfg, sizeof cfg, "%s/sshd_%s_%d.conf", s->dir, addr, s->port);
	snprintf(log, sizeof log, "%s/sshd_%s_%d.log", s->dir, addr, s->port);
	snprintf(pidf, sizeof pidf, "%s/sshd_%s_%d.pid", s->dir, addr, s->port);
	FILE *f = fopen(cfg, "w");
	if (!f || s->port <= 0) {
		snprintf(s->why, sizeof s->why, "no port for sshd on %s", addr);
		if (f)
			fclose(f);
		return -1;
	}
	fprintf(f,
	        "ListenAddress %s\nPort %d\nHostKey %s/host_key\n"
	        "AuthorizedKeysFile %s/authorized_keys\n"
	        "PermitRootLogin prohibit-password\nStrictModes no\n"
	        "UsePAM no\nPidFile %s\nPasswordAuthentication no\n"
	        "KbdInteractiveAuthentication no\nMaxStartups 64\n"
	        "MaxSessions 64\nUseDNS no\n",
	        addr, s->port, s->dir, s->dir, pidf);
	fclose(f);
	char cmd[2400];
	snprintf(cmd, sizeof cmd, "exec %s%s%s -D -e -f %s", wrap ? wrap : "",
	         wrap ? " " : "", SSHD_PATH, cfg);
	s->pid = fork();
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			dup2(fd, 1), dup2(fd, 2);
		execl("/bin/sh", "sh", "-c", cmd, (char *)0);
		_exit(127);
	}
	for (int i = 0; i < 300; i++) { /* until it answers */
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = -1;
			break;
		}
		char probe[1600];
		snprintf(probe, sizeof probe,
		         "%s%s %s -p %d -- %s true "
		         "</dev/null >/dev/null 2>&1",
		         wrap ? wrap : "", wrap ? " " : "", s->ssh_cmd, s->port,
		         addr);
		if (i % 10 == 9 && mu_sh("%s", probe) == 0)
			return 0;
		usleep(20000);
	}
	char tail[300] = "";
	FILE *lf = fopen(log, "r");
	if (lf) {
		char line[300];
		while (fgets(line, sizeof line, lf))
			snprintf(tail, sizeof tail, "%s", line);
		fclose(lf);
	}
	tail[strcspn(tail, "\n")] = 0;
	snprintf(s->why, sizeof s->why, "sshd on %s:%d did not start: %s", addr,
	         s->port, tail[0] ? tail : "(no log)");
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = -1;
	}
	return -1;
}

static inline void
mu_sshd_stop(struct sshd *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGTERM);
	for (int i = 0; i < 200; i++) {
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = -1;
			return;
		}
		usleep(10000);
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	s->pid = -1;
}

#endif
