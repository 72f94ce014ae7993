/*
 * Internals shared by the cluster managers beyond one machine (ssh,
 * machine files, dial-in, Slurm): host specs and machine files, and the
 * helpers every process-starting manager needs.  docs/managers.md is the
 * user's side of all this.
 */
#ifndef DW_RUNTIME_MANAGERS_MGR_H
#define DW_RUNTIME_MANAGERS_MGR_H

#include <stddef.h>
#include <stdint.h>

#include <dwork/dwork.h>

/* ---- host specs and machine files (machinefile.c) ---- */

#define MF_COUNT_MAX 4096  /* workers on one host */
#define MF_LINE_MAX  4096  /* bytes of one machine-file line */
#define MF_HOSTS_MAX 65536 /* lines of one machine file */
#define MF_FILE_MAX  (16u << 20)

/* One host: "[count*][user@]host[:port] [bind_addr[:port]]". */
struct mf_host {
	int count;      /* >= 1, or DW_AUTO */
	char user[64];  /* "" for ssh's default */
	char host[256]; /* a name, IPv4, or IPv6 without brackets */
	int port;       /* sshd's port, 0 for ssh's default */
	char bind[256]; /* where its workers listen, "" for the default */
	int bind_port;  /* first port they listen on, 0 for any */
};

/*
 * Parses "[user@]host[:port]" into h->user, h->host, h->port.  Returns 0,
 * or -1 with the reason in why.  Host names are letters, digits, '.',
 * '-', '_' and never start with '-' (ssh would take them for an option);
 * IPv6 addresses go in brackets.
 */
int mf_parse_dest(const char *s, size_t len, struct mf_host *h, char *why,
                  size_t whylen);
/* Parses "addr[:port]" into h->bind, h->bind_port; 0 or -1. */
int mf_parse_bind(const char *s, size_t len, struct mf_host *h, char *why,
                  size_t whylen);
/*
 * Parses one machine-file line (without its newline).  Returns 1 with *h
 * filled, 0 for a blank or comment line, -1 with the reason in why.
 */
int mf_parse_line(const char *s, size_t len, struct mf_host *h, char *why,
                  size_t whylen);
/*
 * Parses a whole machine file held in memory.  On success returns 0 and
 * *hosts (malloc'd, free it) holds *n hosts.  On a malformed line returns
 * -1 with "NAME:LINE: reason" in why.  An empty file is an error.
 */
int mf_parse(const char *text, size_t len, const char *name,
             struct mf_host **hosts, int *n, char *why, size_t whylen);
/* Reads and parses the file at path.  Returns DW_OK, DW_EFORMAT for a
 * malformed or empty file, or the error of opening or reading it; why
 * names the file. */
int mf_read(const char *path, struct mf_host **hosts, int *n, char *why,
            size_t whylen);

/* ---- starting processes (proc.c) ---- */

struct mp_proc {
	int pid;
	int in_fd, out_fd, err_fd; /* our ends of its stdin/stdout/stderr */
	int err;                   /* dw_err when it could not start */
	char why[300];
};

/*
 * Starts argv[0] (searched in PATH when it has no '/') with envp (NULL:
 * ours) in dir (NULL: ours), pipes on its stdin, stdout and stderr, on the
 * runtime's I/O thread so that PR_SET_PDEATHSIG follows the process's
 * lifetime.  Returns DW_OK, or the error with p->why naming it.
 */
int mp_spawn(struct mp_proc *p, char *const argv[], char *const envp[],
             const char *dir);
/* As mp_spawn, with sock as the child's stdin and stdout (the caller
 * keeps its own descriptor); only stderr is a pipe. */
int mp_spawn_sock(struct mp_proc *p, char *const argv[], int sock);
/* Closes our ends of its pipes (those still open). */
void mp_close(struct mp_proc *p);
/* SIGKILLs a process we started (never pid <= 0). */
void mp_kill(int pid);
/* Waits up to ms for it to exit, then kills it; returns its wait status,
 * or -1 when it had to be killed or was already reaped. */
int mp_reap(int pid, int ms);
/* Writes s to fd whole; a closed reader's SIGPIPE never ends us.
 * Returns 0 or -1. */
int mp_write(int fd, const char *s, size_t len);
/* Reads one line (without '\n') until deadline (ms, rt_now_ms clock).
 * Returns 0, -1 at EOF/error, -2 on timeout. */
int mp_read_line(int fd, uint64_t deadline, char *line, size_t len);
/* Reads what is there now (waiting at most ms) from fd into buf, keeps
 * its last non-empty line as text; for error messages. */
void mp_tail(int fd, int ms, char *buf, size_t len);
/* Describes a wait status: "exited with status 3", "killed by signal 9". */
void mp_describe_status(int st, char *buf, size_t len);
/* Parses "dwork-worker-address HOST:PORT" (HOST may be [v6]); 0 or -1. */
int mp_parse_addr(const char *line, char *host, size_t hostlen, int *port);
/* 1 when host is a wildcard address (0.0.0.0, ::). */
int mp_is_wildcard(const char *host);
/* This executable's path ("" when unknown). */
void mp_self_exe(char *buf, size_t len);
/* Quotes s for a POSIX shell ('...', with ' as '\''); returns the bytes
 * written or -1 when out of room. */
int mp_shell_quote(char *out, size_t len, const char *s);
/* Splits a command line on blanks into at most max-1 words (no quoting
 * rules); words point into buf, which is modified.  Returns the count. */
int mp_split(char *buf, char **words, int max);

/* ---- dial-in (dialin.c) ---- */

/*
 * Master: the handshake with a worker that dialled in, giving it id (the
 * master proves first; the worker's proof follows).  Returns 0 with the
 * worker's answer in r, or -1 with the reason.
 */
struct hs_result;
int dial_check_proof(int fd, int id, uint64_t deadline, struct hs_result *r,
                     char *why, size_t whylen);

#endif
