/*
 * dwork top --http: one self-contained page (no external assets) with the
 * table of processes and a scrolling plot of the cluster's efficiencies
 * over the last intervals, refreshing itself from /snapshot.json.  The
 * page carries the snapshot it was served with, so it shows the table
 * before its first refresh.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/rt.h"
#include "tools/cmd.h"
#include "tools/top.h"

static const char page_head[] =
    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
    "<title>dwork top</title>\n<style>\n"
    "body{font:14px sans-serif;margin:1em;color:#222}\n"
    "table{border-collapse:collapse}td,th{padding:2px 10px;"
    "text-align:right}th{background:#eee}td.l,th.l{text-align:left}\n"
    ".useful{color:#1a7f37}.waiting{color:#b35900}.idle{color:#888}\n"
    "#plot{border:1px solid #ccc;margin-top:1em}#cluster{margin-top:1em}\n"
    "</style></head><body>\n"
    "<h1>dwork top</h1><p id=\"head\"></p>\n"
    "<table id=\"procs\"><thead><tr><th>id</th><th class=\"l\">state"
    "</th><th>useful %</th><th>since start %</th><th>served</th>"
    "<th class=\"l\">function</th><th>queue</th><th>memory</th>"
    "<th class=\"l\">host</th></tr>"
    "</thead><tbody></tbody></table>\n"
    "<table id=\"cluster\"><thead><tr><th class=\"l\">cluster</th>"
    "<th>interval</th><th>since start</th></tr></thead><tbody></tbody>"
    "</table>\n<ul id=\"exited\"></ul>\n"
    "<canvas id=\"plot\" width=\"720\" height=\"200\"></canvas>\n"
    "<p><span style=\"color:#1f77b4\">parallel efficiency</span> · "
    "<span style=\"color:#2ca02c\">load balance</span> · "
    "<span style=\"color:#d62728\">communication efficiency</span> "
    "(last interval)</p>\n"
    "<script id=\"snap\" type=\"application/json\">";

static const char page_tail[] =
    "</script>\n<script>\n"
    "var hist=[];\n"
    "function cell(r,t,c){var d=r.insertCell();d.textContent=t;"
    "if(c)d.className=c;}\n"
    "function pct(x){return (100*x).toFixed(1);}\n"
    "function fmt(x){return x==null?'-':x.toFixed(3);}\n"
    "function show(s){\n"
    " document.getElementById('head').textContent='pid '+s.pid+', up '+"
    "s.uptime_s.toFixed(1)+' s, '+s.processes.length+' processes';\n"
    " var b=document.querySelector('#procs tbody');b.innerHTML='';\n"
    " s.processes.forEach(function(p){var r=b.insertRow();"
    "r.id='p'+p.id;cell(r,p.id);cell(r,p.state,'l '+p.state);"
    "cell(r,pct(p.useful));cell(r,pct(p.useful_since_start));"
    "cell(r,p.served);cell(r,p.function,'l');cell(r,p.queue);"
    "cell(r,(p.rss_bytes/1048576).toFixed(1)+'M');"
    "cell(r,p.host||'-','l');});\n"
    " var c=document.querySelector('#cluster tbody');c.innerHTML='';\n"
    " var i=s.cluster.interval||{},t=s.cluster.since_start||{};\n"
    " [['load balance','load_balance'],['communication efficiency',"
    "'communication_efficiency'],['parallel efficiency',"
    "'parallel_efficiency']].forEach(function(k){var r=c.insertRow();"
    "cell(r,k[0],'l');cell(r,fmt(i[k[1]]));cell(r,fmt(t[k[1]]));});\n"
    " var e=document.getElementById('exited');e.innerHTML='';\n"
    " s.exited.forEach(function(x){var li=document.createElement('li');"
    "li.textContent=x.reason;e.appendChild(li);});\n"
    " if(s.cluster.interval){hist.push(s.cluster.interval);"
    "if(hist.length>120)hist.shift();}\n"
    " plot();}\n"
    "function plot(){var cv=document.getElementById('plot'),"
    "g=cv.getContext('2d'),w=cv.width,h=cv.height;g.clearRect(0,0,w,h);\n"
    " g.strokeStyle='#ddd';for(var y=0;y<=4;y++){g.beginPath();"
    "g.moveTo(0,h-y*h/4);g.lineTo(w,h-y*h/4);g.stroke();}\n"
    " [['parallel_efficiency','#1f77b4'],['load_balance','#2ca02c'],"
    "['communication_efficiency','#d62728']].forEach(function(k){\n"
    "  g.strokeStyle=k[1];g.beginPath();hist.forEach(function(p,j){"
    "var x=w-(hist.length-1-j)*w/119,y=h-Math.min(1,p[k[0]])*h;"
    "if(j)g.lineTo(x,y);else g.moveTo(x,y);});g.stroke();});}\n"
    "show(JSON.parse(document.getElementById('snap').textContent));\n"
    "setInterval(function(){fetch('snapshot.json').then(function(r){"
    "if(!r.ok)throw 0;return r.json();}).then(show).catch(function(){"
    "document.getElementById('head').textContent='the master ended';"
    "});},1000);\n"
    "</script></body></html>\n";

static int
http_send(int c, const char *status, const char *type, const char *a, size_t al,
          const char *b, size_t bl)
{
	char h[256];
	int n = snprintf(h, sizeof h,
	                 "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
	                 "Content-Length: %zu\r\nCache-Control: no-store\r\n"
	                 "Connection: close\r\n\r\n",
	                 status, type, al + bl);
	return cl_io_full(c, h, (size_t)n, 1, rt_now_ms() + 5000) ||
	       cl_io_full(c, (void *)a, al, 1, rt_now_ms() + 5000) ||
	       cl_io_full(c, (void *)b, bl, 1, rt_now_ms() + 5000);
}

/* The snapshot inside a <script> element: no "</" may end it early. */
static char *
http_embed(const char *s, size_t len, size_t *out)
{
	char *e = malloc(6 * len + 1), *q = e;
	if (!e)
		return NULL;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '<')
			memcpy(q, "\\u003c", 6), q += 6;
		else
			*q++ = s[i];
	*out = (size_t)(q - e);
	return e;
}

/* Reads the request line; 0 for "/", 1 for the snapshot, 2 other. */
static int
http_read(int c)
{
	char buf[4096];
	size_t n = 0;
	while (n < sizeof buf - 1 && !memmem(buf, n, "\r\n\r\n", 4)) {
		if (cl_wait_fd(c, POLLIN, rt_now_ms() + 30000) < 0)
			return -1;
		ssize_t r = recv(c, buf + n, sizeof buf - 1 - n, 0);
		if (r <= 0)
			return -1;
		n += (size_t)r;
	}
	buf[n] = 0;
	if (!strncmp(buf, "GET / ", 6) || !strncmp(buf, "GET /index.html ", 16))
		return 0;
	if (!strncmp(buf, "GET /snapshot.json ", 19))
		return 1;
	return 2;
}

/* The control link serves one request at a time. */
static pthread_mutex_t http_lock = PTHREAD_MUTEX_INITIALIZER;
static int http_ended;

static char *
http_snapshot(int fd, size_t *len)
{
	pthread_mutex_lock(&http_lock);
	char *s = http_ended ? NULL : top_request(fd, 0, len);
	if (!s)
		http_ended = 1;
	pthread_mutex_unlock(&http_lock);
	return s;
}

/* One request; -1 when the master's link has ended. */
static int
http_serve(int c, int fd)
{
	int what = http_read(c);
	if (what < 0)
		return 0;
	if (what == 2) {
		http_send(c, "404 Not Found", "text/plain", "not found\n", 10,
		          "", 0);
		return 0;
	}
	size_t len, el;
	char *s = http_snapshot(fd, &len);
	if (!s) {
		http_send(c, "503 Service Unavailable", "text/plain",
		          "the master ended\n", 17, "", 0);
		return -1;
	}
	if (what == 1) {
		http_send(c, "200 OK", "application/json", s, len, "", 0);
	} else {
		char *e = http_embed(s, len, &el);
		if (e) {
			size_t hl = sizeof page_head - 1;
			char *page = malloc(hl + el);
			if (page) {
				memcpy(page, page_head, hl);
				memcpy(page + hl, e, el);
				http_send(c, "200 OK",
				          "text/html; charset=utf-8", page,
				          hl + el, page_tail,
				          sizeof page_tail - 1);
			}
			free(page);
		}
		free(e);
	}
	free(s);
	return 0;
}

static int
http_listen(const char *addr)
{
	char host[128];
	const char *colon = strrchr(addr, ':');
	char *end;
	long port = colon ? strtol(colon + 1, &end, 10) : -1;
	if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof host ||
	    port < 0 || port > 65535 || *end) {
		fprintf(stderr,
		        "dwork top: --http wants HOST:PORT (like "
		        "127.0.0.1:8080), not '%s'\n",
		        addr);
		return -1;
	}
	snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
	struct sockaddr_in sa = {.sin_family = AF_INET,
	                         .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "dwork top: '%s' is not an IPv4 address\n",
		        host);
		return -1;
	}
	int one = 1, l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l >= 0)
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(l, 16) < 0) {
		fprintf(stderr, "dwork top: cannot listen on %s: %s\n", addr,
		        strerror(errno));
		if (l >= 0)
			close(l);
		return -1;
	}
	socklen_t sl = sizeof sa;
	getsockname(l, (struct sockaddr *)&sa, &sl);
	printf("dwork top: serving http://%s:%u/\n", host,
	       (unsigned)ntohs(sa.sin_port));
	fflush(stdout);
	return l;
}

/* The master never speaks first: the link readable while no request is
 * in flight means it closed. */
static int
http_link_ended(int fd)
{
	pthread_mutex_lock(&http_lock);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b;
	int ended = http_ended ||
	            (poll(&p, 1, 0) > 0 && recv(fd, &b, 1, MSG_PEEK) <= 0);
	if (ended)
		http_ended = 1;
	pthread_mutex_unlock(&http_lock);
	return ended;
}

struct http_conn {
	int c, fd;
};

/* A browser opens connections ahead of its requests: each is served on
 * a thread of its own, so that an idle one never holds up the others. */
static void *
http_thread(void *arg)
{
	struct http_conn *h = arg;
	http_serve(h->c, h->fd);
	close(h->c);
	free(h);
	return NULL;
}

int
top_http(int fd, const char *addr)
{
	int l = http_listen(addr);
	if (l < 0)
		return CMD_USAGE;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	while (!__atomic_load_n(&http_ended, __ATOMIC_RELAXED)) {
		struct pollfd pf[2] = {{.fd = l, .events = POLLIN},
		                       {.fd = fd, .events = POLLIN}};
		if (poll(pf, 2, 1000) < 0 && errno != EINTR)
			break;
		if (pf[1].revents && http_link_ended(fd))
			break;
		if (!(pf[0].revents & POLLIN))
			continue;
		int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		struct http_conn *h = malloc(sizeof *h);
		pthread_t t;
		if (!h) {
			close(c);
			continue;
		}
		*h = (struct http_conn){c, fd};
		if (pthread_create(&t, &a, http_thread, h) != 0) {
			close(c);
			free(h);
		}
	}
	pthread_attr_destroy(&a);
	close(l);
	printf("dwork top: the master ended\n");
	return CMD_OK;
}
